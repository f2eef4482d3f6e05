/*
 * vigil/ops_ext.h - builders for the wider TF1 op set real training programs call
 * (issue 11 §3): rounding and integer division, transcendental functions, the extra
 * activations, losses and clipping. Same conventions as vigil/ops.h: each builder adds
 * its op(s) to g and returns the output; on failure it returns {NULL, 0} and records
 * the graph's sticky error (vg_graph_status). `name` may be NULL (the TF op type, or
 * TF's default scope name for composites, made unique). Nothing returned is owned by
 * the caller beyond the graph.
 *
 * Errors (at build time, through the graph's status; at run time, from the session):
 * VG_INVALID_ARGUMENT for unsupported dtypes (naming the op and dtype), mismatched
 * shapes ("Incompatible shapes: [2,3] vs. [4]"), an integer divisor of 0 ("Integer
 * division by zero"); VG_RESOURCE_EXHAUSTED when out of memory.
 */
#ifndef VIGIL_OPS_EXT_H
#define VIGIL_OPS_EXT_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- rounding and division (src/kernels/math/math_rounding_ops.c) ------------- */
/* Floor, Ceil, Rint: float/double. Round: half to even; float/double, int32/int64
 * (identity). None of them has a gradient (TF returns None). */
VG_API vg_output vg_floor(vg_graph *g, vg_output x, const char *name);
VG_API vg_output vg_ceil(vg_graph *g, vg_output x, const char *name);
VG_API vg_output vg_round(vg_graph *g, vg_output x, const char *name);
VG_API vg_output vg_rint(vg_graph *g, vg_output x, const char *name);
/* FloorDiv (tf.floordiv, //): floor(x / y); float/double/int32/int64/uint8. No gradient. */
VG_API vg_output vg_floor_div(vg_graph *g, vg_output x, vg_output y, const char *name);
/* FloorMod (tf.floormod, %): result has the sign of y; float/double/int32/int64.
 * Gradient (grad, -grad * floor_div(x, y)). */
VG_API vg_output vg_floor_mod(vg_graph *g, vg_output x, vg_output y, const char *name);
/* TruncateDiv: C's integer division; int32/int64/uint8 only (as TF's CPU kernels). */
VG_API vg_output vg_truncate_div(vg_graph *g, vg_output x, vg_output y, const char *name);

/* ---- transcendental (src/kernels/math/math_special_ops.c), float/double -------- */
VG_API vg_output vg_sin(vg_graph *g, vg_output x, const char *name);
VG_API vg_output vg_cos(vg_graph *g, vg_output x, const char *name);
VG_API vg_output vg_erf(vg_graph *g, vg_output x, const char *name);
VG_API vg_output vg_log1p(vg_graph *g, vg_output x, const char *name);
VG_API vg_output vg_expm1(vg_graph *g, vg_output x, const char *name);

/* ---- activations (src/kernels/nn/nn_activation_ops.c), float/double ---------- */
VG_API vg_output vg_softplus(vg_graph *g, vg_output x, const char *name);
VG_API vg_output vg_softsign(vg_graph *g, vg_output x, const char *name);
VG_API vg_output vg_elu(vg_graph *g, vg_output x, const char *name);
VG_API vg_output vg_selu(vg_graph *g, vg_output x, const char *name);
VG_API vg_output vg_relu6(vg_graph *g, vg_output x, const char *name);
/* LeakyRelu with attr alpha (TF's default is 0.2). */
VG_API vg_output vg_leaky_relu(vg_graph *g, vg_output x, float alpha, const char *name);

/* tf.nn.lrn / local_response_normalization (src/kernels/nn/nn_lrn_ops.c): x 4-D NHWC,
 * y = x / (bias + alpha * sum over the depth window of x^2) ^ beta (TF's defaults:
 * depth_radius 5, bias 1, alpha 1, beta 0.5). Gradient through LRNGrad. */
VG_API vg_output vg_lrn(vg_graph *g, vg_output x, int depth_radius, float bias, float alpha, float beta,
                        const char *name);

/* ---- losses (src/kernels/nn/nn_loss_ops.c) ------------------------------------ */
/* L2Loss: sum(t^2) / 2, a scalar. */
VG_API vg_output vg_l2_loss(vg_graph *g, vg_output t, const char *name);
/* tf.nn.sigmoid_cross_entropy_with_logits(labels, logits): element-wise
 * max(x, 0) - x * z + log(1 + exp(-|x|)), ops under the scope "logistic_loss" and the
 * result named "logistic_loss". INVALID_ARGUMENT "logits and labels must have the same
 * shape ([2,3] vs [3])" or on differing dtypes. */
VG_API vg_output vg_sigmoid_cross_entropy_with_logits(vg_graph *g, vg_output labels, vg_output logits, const char *name);

/* ---- clipping (src/kernels/math/clip_ops.c) -------------------------------------- */
/* tf.clip_by_value: Minimum(t, hi) then Maximum(., lo) named "clip_by_value" (as TF
 * 1.15's Python). INVALID_ARGUMENT when lo/hi would broadcast t to another shape. */
VG_API vg_output vg_clip_by_value(vg_graph *g, vg_output t, vg_output lo, vg_output hi, const char *name);
/* The raw ClipByValue op: lo and hi scalars or t's shape; gradient as TF. */
VG_API vg_output vg_clip_by_value_op(vg_graph *g, vg_output t, vg_output lo, vg_output hi, const char *name);

/* ---- slicing, splitting, reversing, scans --------------------------------- */
/* The five StridedSlice masks (bit i refers to entry i of begin/end/strides). */
typedef struct vg_strided_slice_masks {
    int64_t begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask;
} vg_strided_slice_masks;
/* StridedSlice(x, begin, end, strides) (src/kernels/array/strided_slice_ops.c): x[b:e:s, ...]
 * with TF's mask semantics (masks NULL = all zero). begin/end/strides are 1-D int32 or
 * int64 of one length. Errors (INVALID_ARGUMENT, at build time when the spec is
 * constant, else at run time): "strides[i] must be non-zero", "slice index 5 of
 * dimension 0 out of bounds.", "Multiple ellipses in slice spec not allowed",
 * "only stride 1 allowed on non-range indexing.". Gradient: StridedSliceGrad. */
VG_API vg_output vg_strided_slice(vg_graph *g, vg_output x, vg_output begin, vg_output end, vg_output strides,
                                  const vg_strided_slice_masks *masks, const char *name);
/* Same with n-entry C arrays (strides NULL = all 1), as Python's x[...] builds them. */
VG_API vg_output vg_strided_slice_c(vg_graph *g, vg_output x, const int32_t *begin, const int32_t *end,
                                    const int32_t *strides, int n, const vg_strided_slice_masks *masks,
                                    const char *name);
/* tf.split(value, num_split, axis) -> Split; outputs 0..num_split-1 of the returned op
 * (src/kernels/array/split_ops.c). INVALID_ARGUMENT "Number of ways to split should evenly
 * divide the split dimension, ...". Returns NULL on failure. */
VG_API vg_op *vg_split(vg_graph *g, vg_output value, int num_split, int axis, const char *name);
/* tf.split(value, size_splits, axis) -> SplitV; one size may be -1 (inferred). */
VG_API vg_op *vg_split_v(vg_graph *g, vg_output value, const int32_t *size_splits, int num_split, int axis,
                         const char *name);
/* tf.unstack(value, num, axis) -> Unpack; num -1 infers it from the static shape. */
VG_API vg_op *vg_unpack(vg_graph *g, vg_output value, int num, int axis, const char *name);
/* ReverseV2(x, axis) (src/kernels/array/reverse_ops.c), axis a 1-D int32/int64 tensor;
 * INVALID_ARGUMENT for an axis out of range or given twice. */
VG_API vg_output vg_reverse(vg_graph *g, vg_output x, vg_output axis, const char *name);
VG_API vg_output vg_reverse_c(vg_graph *g, vg_output x, const int32_t *axes, int naxes, const char *name);
/* Cumsum / Cumprod(x, axis, exclusive, reverse) (src/kernels/math/scan_ops.c);
 * float/double/int32/int64. */
VG_API vg_output vg_cumsum(vg_graph *g, vg_output x, int axis, bool exclusive, bool reverse, const char *name);
VG_API vg_output vg_cumprod(vg_graph *g, vg_output x, int axis, bool exclusive, bool reverse, const char *name);

/* ---- top-k (src/kernels/array/sort_ops.c) ----------------------------------------- */
/* tf.nn.top_k: TopKV2 over the last dim; output 0 values, output 1 int32 indices.
 * INVALID_ARGUMENT "input must have at least k columns. Had 3, needed 5", "Need k >= 0".
 * The gradient needs the last dim known at build time. Returns NULL on failure. */
VG_API vg_op *vg_top_k(vg_graph *g, vg_output input, int k, bool sorted, const char *name);
/* tf.nn.in_top_k -> InTopKV2: bool [batch]; predictions float [batch, classes],
 * targets int32/int64 [batch]. Not differentiable. */
VG_API vg_output vg_in_top_k(vg_graph *g, vg_output predictions, vg_output targets, int k, const char *name);

/* ---- nd gather / scatter (src/kernels/array/scatter_gather_nd_ops.c) --------------- */
/* GatherNd(params, indices): indices [..., m], int32/int64. An index out of range fails
 * with INVALID_ARGUMENT "indices[1] = [3, 0] does not index into param shape [2,2]". */
VG_API vg_output vg_gather_nd(vg_graph *g, vg_output params, vg_output indices, const char *name);
/* ScatterNd(indices, updates, shape): zeros of shape with updates added (duplicates
 * sum). INVALID_ARGUMENT "Invalid indices: ..." / "Must have updates.shape = ...". */
VG_API vg_output vg_scatter_nd(vg_graph *g, vg_output indices, vg_output updates, vg_output shape, const char *name);
/* TensorScatterUpdate(tensor, indices, updates): a copy of tensor with the slices
 * replaced (the last duplicate wins). */
VG_API vg_output vg_tensor_scatter_update(vg_graph *g, vg_output tensor, vg_output indices, vg_output updates,
                                          const char *name);

/* SparseToDense (tf.sparse_to_dense(sparse_indices, output_shape, sparse_values,
 * default_value, validate_indices)): indices a scalar, vector or [N, rank] matrix
 * (int32/int64, output_shape the same dtype), values a scalar or [N], default_value a
 * scalar of the values' dtype. Run-time INVALID_ARGUMENT "indices[1] = [3,0] is out of
 * bounds: need 0 <= index < [2,2]", "... is out of order" / "... is repeated" (the
 * last two only with validate_indices). Gradient for values and default_value
 * (src/kernels/array/sparse_to_dense_ops.c). */
VG_API vg_output vg_sparse_to_dense(vg_graph *g, vg_output sparse_indices, vg_output output_shape,
                                    vg_output sparse_values, vg_output default_value, bool validate_indices,
                                    const char *name);
/* tf.pad(x, paddings) in CONSTANT mode with 0: op Pad; paddings an int32/int64 [rank, 2]
 * tensor (src/kernels/array/array_index_ops.c; gradient: a Slice of dy). */
VG_API vg_output vg_pad(vg_graph *g, vg_output x, vg_output paddings, const char *name);

/* ---- linear algebra (src/kernels/math/linalg_ops.c) -------------------------------- */
/* BatchMatMulV2 (tf.matmul of rank >= 2 tensors): x [..., M, K] times y [..., K, N]
 * with the batch dims broadcast; adj_x / adj_y transpose the last two dims.
 * float/double. INVALID_ARGUMENT "In[0] mismatch In[1] shape: ..." or incompatible
 * batch dims. */
VG_API vg_output vg_batch_matmul(vg_graph *g, vg_output x, vg_output y, bool adj_x, bool adj_y, const char *name);
/* MatrixBandPart(x, num_lower, num_upper) (tf.linalg.band_part): keeps the band of the
 * last two dims (a negative count keeps that whole triangle). */
VG_API vg_output vg_matrix_band_part(vg_graph *g, vg_output x, vg_output num_lower, vg_output num_upper,
                                     const char *name);
VG_API vg_output vg_matrix_band_part_c(vg_graph *g, vg_output x, int64_t num_lower, int64_t num_upper,
                                       const char *name);
/* Diag (rank k -> 2k, the values on the diagonal) and DiagPart (2k -> k). */
VG_API vg_output vg_diag(vg_graph *g, vg_output diagonal, const char *name);
VG_API vg_output vg_diag_part(vg_graph *g, vg_output input, const char *name);
/* tf.linalg.diag_part / tf.matrix_diag_part (MatrixDiagPart): input [..., M, N] ->
 * [..., min(M, N)], the main diagonal of each matrix. INVALID_ARGUMENT for rank < 2. */
VG_API vg_output vg_matrix_diag_part(vg_graph *g, vg_output input, const char *name);
/* tf.linalg.set_diag / tf.matrix_set_diag (MatrixSetDiag): input [..., M, N] with the
 * main diagonal of each matrix replaced by diagonal [..., min(M, N)]. INVALID_ARGUMENT
 * naming the dimension when the shapes disagree, or for differing dtypes. Both are
 * differentiable (w.r.t. input and diagonal). */
VG_API vg_output vg_matrix_set_diag(vg_graph *g, vg_output input, vg_output diagonal, const char *name);

/* ---- sampling (src/kernels/math/random_sampling_ops.c) -------------------------------- */
/* tf.multinomial(logits [batch, classes], num_samples, seed, output_dtype int32/int64):
 * class indices [batch, num_samples] drawn from softmax(logits) (non-finite logits get
 * probability 0). Seeds as TF's get_seed; the values are vigil's own stream. Not
 * differentiable. INVALID_ARGUMENT "num_samples should be nonnegative, got -1". */
/* RandomUniformInt(shape, minval, maxval) with explicit seed/seed2 attrs (raw op, as
 * vg_random_uniform); minval/maxval int32 or int64 scalars. Run-time INVALID_ARGUMENT
 * "Need minval < maxval: 5 >= 5". */
VG_API vg_output vg_random_uniform_int(vg_graph *g, vg_output shape, vg_output minval, vg_output maxval, int64_t seed,
                                       int64_t seed2, const char *name);
VG_API vg_output vg_multinomial(vg_graph *g, vg_output logits, int num_samples, int64_t seed, vg_dtype output_dtype,
                                const char *name);

/* ---- gamma family (src/kernels/math/gamma_ops.c), float/double ------------------------ */
/* tf.lgamma (log|Gamma(x)|, +inf at 0 and the negative integers), tf.digamma (psi(x),
 * +inf at the poles) and tf.polygamma(a, x) (the a-th derivative of psi; a and x of
 * one dtype, broadcast; NaN where a is not a non-negative integer). Gradients as TF's
 * math_grad.py: dy * digamma(x), dy * polygamma(1, x), and for Polygamma
 * dy * polygamma(a + 1, x) w.r.t. x only. */
VG_API vg_output vg_lgamma(vg_graph *g, vg_output x, const char *name);
VG_API vg_output vg_digamma(vg_graph *g, vg_output x, const char *name);
VG_API vg_output vg_polygamma(vg_graph *g, vg_output a, vg_output x, const char *name);
/* tf.random.gamma(shape, alpha, beta, seed) as TF 1.15's random_ops.py composes it under
 * "random_gamma": Maximum(tiny, RandomGamma(shape, alpha + zeros_like(beta)) / beta);
 * shape a 1-D int32/int64 tensor, the result shape ++ alpha.shape, each draw
 * Gamma(alpha, beta) (rate beta; beta {NULL, 0} = 1). alpha float/double (else a build
 * INVALID_ARGUMENT); alpha <= 0 draws NaN. Seeds as TF's get_seed; the values are
 * vigil's own stream (the same seeds repeat them). Differentiable w.r.t. alpha (and beta)
 * through RandomGammaGrad (implicit reparameterization). */
VG_API vg_output vg_random_gamma(vg_graph *g, vg_output shape, vg_output alpha, vg_output beta, int64_t seed,
                                 const char *name);
/* tf.math.betainc(a, b, x): the regularized incomplete beta function I_x(a, b); a, b and x
 * of one float dtype and one shape, or scalars (else INVALID_ARGUMENT "Shapes of a, b,
 * and x must be consistent"); NaN outside a, b > 0, 0 <= x <= 1. Gradient w.r.t. x only
 * (TF's _BetaincGrad). */
VG_API vg_output vg_betainc(vg_graph *g, vg_output a, vg_output b, vg_output x, const char *name);
/* The raw RandomGammaGrad(alpha, sample) op: d sample / d alpha for sample ~
 * Gamma(alpha, 1), broadcast; not differentiable itself (as TF). */
VG_API vg_output vg_random_gamma_grad(vg_graph *g, vg_output alpha, vg_output sample, const char *name);

/* ---- unique (src/kernels/array/unique_op.c) ------------------------------------ */
/* tf.unique(x, out_idx): Unique's output 0 is y (the distinct values of the 1-D x in
 * order of first occurrence), output 1 idx (x[i] == y[idx[i]]), out_idx VG_INT32 or
 * VG_INT64. int32/int64/float/double; no gradient. */
VG_API vg_op *vg_unique(vg_graph *g, vg_output x, vg_dtype out_idx, const char *name);

/* ---- sequences, broadcasting, segments, norms (src/kernels/array/array_ext_ops.c) ---- */
/* tf.sequence_mask(lengths, maxlen, dtype), composed as TF's array_ops.py under the
 * scope "SequenceMask": Less(Range(0, maxlen, 1), Cast(ExpandDims(lengths, -1))), then a
 * Cast to dtype unless dtype is VG_BOOL (or VG_DTYPE_INVALID). maxlen {NULL, 0} uses
 * max(max(lengths), 0). Shape lengths.shape + [maxlen]. Build-time INVALID_ARGUMENT
 * "maxlen must be scalar for sequence_mask".
 *
 *     vg_output len = vg_const_array(g, VG_INT32, (int64_t[]){3}, 1, (int32_t[]){1, 3, 2}, "len");
 *     vg_output m = vg_sequence_mask(g, len, vg_const_i32(g, 5, "maxlen"), VG_BOOL, NULL);  // [3, 5]
 */
VG_API vg_output vg_sequence_mask(vg_graph *g, vg_output lengths, vg_output maxlen, vg_dtype dtype, const char *name);
/* tf.reverse_sequence(input, seq_lengths, seq_axis, batch_axis) -> ReverseSequence
 * (attrs seq_dim, batch_dim): for each b, the first seq_lengths[b] slices of input
 * along seq_axis reversed, the rest copied. Any dtype (strings too); seq_lengths a 1-D
 * int32/int64 of input.shape[batch_axis]. INVALID_ARGUMENT (build time where the
 * shapes are known, else run time) "seq_dim must be < input rank", "batch_dim ==
 * seq_dim == 1", "Length of seq_lengths != input.dims(0), (3 vs. 2)", "seq_lens(1) <
 * 0", "seq_lens(1) > input.dims(1)". Gradient: ReverseSequence of dy. */
VG_API vg_output vg_reverse_sequence(vg_graph *g, vg_output input, vg_output seq_lengths, int seq_axis, int batch_axis,
                                     const char *name);
/* tf.broadcast_to(input, shape) -> BroadcastTo; shape a 1-D int32/int64 tensor (the _c
 * form makes a Const "<name>/shape"). NumPy broadcasting from the right. INVALID_ARGUMENT
 * "Rank of input (3) must be no greater than rank of output shape (2).", "Incompatible
 * shapes: [3] vs. [2]", "Unable to broadcast tensor of shape [2] to tensor of shape [1]"
 * (build time: "Dimensions must be equal, but are 3 and 2"). Gradient as TF's
 * _BroadcastToGrad: dy summed over BroadcastGradientArgs' axes, reshaped. */
VG_API vg_output vg_broadcast_to(vg_graph *g, vg_output input, vg_output shape, const char *name);
VG_API vg_output vg_broadcast_to_c(vg_graph *g, vg_output input, const int64_t *dims, int ndims, const char *name);
/* tf.bitcast(input, type) -> Bitcast: the same bytes as another dtype (not bool, string
 * or resource). Equal element sizes keep the shape; a smaller `type` appends a dimension
 * of size in/out (float32 -> uint8: [n] -> [n, 4]); a larger one needs the last
 * dimension to be out/in and removes it. INVALID_ARGUMENT "Cannot bitcast due to shape.
 * 3 does not match 4" (build time) / "Cannot bitcast from uint8 to float: shape [2,3]"
 * (run time), "Value for attr 'T' of bool is not in the list of allowed values". No
 * gradient (as TF). */
VG_API vg_output vg_bitcast(vg_graph *g, vg_output input, vg_dtype type, const char *name);
/* tf.math.unsorted_segment_max / _min / _prod -> UnsortedSegmentMax / Min / Prod, as
 * vg_unsorted_segment_sum (vigil/ops.h): output [num_segments] + data.shape[ids.rank:];
 * an empty segment holds the dtype's lowest value (max), highest (min) or 1 (prod); a
 * negative id drops its row. float/double/int32/int64. Run-time INVALID_ARGUMENT
 * "segment_ids[3] = 7 is out of range [0, 5)". Gradients as TF's math_grad.py
 * (_UnsortedSegmentMinOrMaxGrad: dy shared among the elements equal to the result;
 * _UnsortedSegmentProdGrad). */
VG_API vg_output vg_unsorted_segment_max(vg_graph *g, vg_output data, vg_output segment_ids, vg_output num_segments,
                                         const char *name);
VG_API vg_output vg_unsorted_segment_min(vg_graph *g, vg_output data, vg_output segment_ids, vg_output num_segments,
                                         const char *name);
VG_API vg_output vg_unsorted_segment_prod(vg_graph *g, vg_output data, vg_output segment_ids, vg_output num_segments,
                                          const char *name);
/* tf.math.unsorted_segment_mean / _sqrt_n (math_ops.py compositions under the scopes
 * "UnsortedSegmentMean" / "UnsortedSegmentSqrtN"): UnsortedSegmentSum divided by the
 * segment size N (or sqrt(N)), N at least 1. data float/double of known rank
 * (INVALID_ARGUMENT otherwise). */
VG_API vg_output vg_unsorted_segment_mean(vg_graph *g, vg_output data, vg_output segment_ids, vg_output num_segments,
                                          const char *name);
VG_API vg_output vg_unsorted_segment_sqrt_n(vg_graph *g, vg_output data, vg_output segment_ids,
                                            vg_output num_segments, const char *name);
/* tf.norm(tensor, ord, axis, keepdims) as TF's linalg_ops.py composes it under "norm":
 * ord VG_NORM_EUCLIDEAN ('euclidean', and 'fro' over two axes) or 2 for vectors:
 * sqrt(reduce_sum(x * x)); 1: reduce_sum(abs(x)) (matrices: then max over axes[1]);
 * INFINITY: reduce_max(abs(x)) (matrices: sum over axes[1] first); another p > 0 for
 * vectors: pow(reduce_sum(pow(abs(x), p)), 1/p). naxes 0 = all elements (axis=None), 1
 * = a vector norm over axes[0], 2 = a matrix norm over axes[0..1]. Build-time
 * INVALID_ARGUMENT with TF's ValueError texts ("'axis' must be None, an integer, or a
 * tuple of 2 unique integers", "'ord' must be a supported vector norm, got -1");
 * UNIMPLEMENTED for the matrix 2-norm (ord 2 over two axes, an SVD in TF). */
#define VG_NORM_EUCLIDEAN 0.0
VG_API vg_output vg_norm(vg_graph *g, vg_output x, double ord, const int32_t *axes, int naxes, bool keepdims,
                         const char *name);
/* tf.boolean_mask(tensor, mask, axis) for a mask of rank k >= 1 (TF's array_ops.py):
 * tensor's dims axis..axis+k-1 reshaped into one, Where(Reshape(mask, [-1])),
 * Squeeze, GatherV2 along axis, under "boolean_mask". Build-time INVALID_ARGUMENT
 * "mask cannot be scalar.", "Number of mask dimensions must be specified, ...",
 * "Shapes (2, 3) and (2, 4) are incompatible", or a non-bool mask. (vg_boolean_mask in
 * vigil/ops.h is the 1-D, axis-0 case.) */
VG_API vg_output vg_boolean_mask_nd(vg_graph *g, vg_output tensor, vg_output mask, int axis, const char *name);

/* ---- assertions (src/kernels/math/check_ops.c; TF's check_ops.py) ----------------------- */
/* Each returns the Assert op (assert_rank / _type: a NoOp when the check passed at build
 * time) to use as a control dependency, NULL on a build-time failure (the graph's error). The binary ones
 * build reduce_all(x <op> y) ("All") and an Assert named "<scope>/Assert/Assert" (for
 * data other than string/int32, inside TF's cond "<scope>/Assert/AssertGuard", whose
 * Merge op is returned) under the scope "assert_equal" (etc.), with TF 1.15's data:
 * [message or "", "Condition x == y did not hold element-wise:", "x (<x's name>) = ", x,
 * "y (<y's name>) = ", y] (assert_none_equal: "... did not hold for every single
 * element:"). A failing run returns INVALID_ARGUMENT "assertion failed: [] [Condition
 * x == y did not hold element-wise:] [x (x:0) = ] [1 2 3] [y (y:0) = ] [1 2 4]"
 * (summarize elements of each tensor; TF's default is 3, -1 prints all). assert_equal
 * of two Consts is checked at build time (the others at run time, as in TF 1.15):
 * INVALID_ARGUMENT with the data joined by newlines.
 *
 *     vg_output a = vg_const_i32(g, 1, "a"), b = vg_placeholder(g, VG_INT32, NULL, 0, "b");
 *     vg_op *chk = vg_assert_equal(g, a, b, "a must equal b", 3, NULL);
 *     vg_graph_push_control_deps(g, &chk, 1);  // ops built here run after the check
 *     vg_graph_pop_control_deps(g);
 */
VG_API vg_op *vg_assert_equal(vg_graph *g, vg_output x, vg_output y, const char *message, int summarize,
                              const char *name);
VG_API vg_op *vg_assert_none_equal(vg_graph *g, vg_output x, vg_output y, const char *message, int summarize,
                                   const char *name);
VG_API vg_op *vg_assert_less(vg_graph *g, vg_output x, vg_output y, const char *message, int summarize,
                             const char *name);
VG_API vg_op *vg_assert_less_equal(vg_graph *g, vg_output x, vg_output y, const char *message, int summarize,
                                   const char *name);
VG_API vg_op *vg_assert_greater(vg_graph *g, vg_output x, vg_output y, const char *message, int summarize,
                                const char *name);
VG_API vg_op *vg_assert_greater_equal(vg_graph *g, vg_output x, vg_output y, const char *message, int summarize,
                                      const char *name);
/* x > 0, x < 0, x >= 0, x <= 0 element-wise: data [message or "", "Condition x > 0 did not
 * hold element-wise:", "x (<name>) = ", x] and assert_less / assert_less_equal against a
 * Const 0 of x's dtype, nested in the scope ("assert_positive/assert_less/..."). */
VG_API vg_op *vg_assert_positive(vg_graph *g, vg_output x, const char *message, int summarize, const char *name);
VG_API vg_op *vg_assert_negative(vg_graph *g, vg_output x, const char *message, int summarize, const char *name);
VG_API vg_op *vg_assert_non_negative(vg_graph *g, vg_output x, const char *message, int summarize, const char *name);
VG_API vg_op *vg_assert_non_positive(vg_graph *g, vg_output x, const char *message, int summarize, const char *name);
/* assert_rank / assert_rank_at_least: with x's rank known at build time, a NoOp
 * "static_checks_determined_all_ok" or a build failure INVALID_ARGUMENT "<message>.
 * Tensor x:0 must have rank 2.  Received rank 1, shape (3,)" (TF's ValueError);
 * otherwise an Assert on Equal(Rank(x), rank) (GreaterEqual) with data [message,
 * "Tensor x:0 must have rank", rank, "Received shape: ", Shape(x)]. */
VG_API vg_op *vg_assert_rank(vg_graph *g, vg_output x, int rank, const char *message, int summarize,
                             const char *name);
VG_API vg_op *vg_assert_rank_at_least(vg_graph *g, vg_output x, int rank, const char *message, int summarize,
                                      const char *name);
/* assert_type: a NoOp "statically_determined_correct_type" when x has dtype dt, else a
 * build failure INVALID_ARGUMENT "<message>  x:0 must be of type <dtype: 'float32'>". */
VG_API vg_op *vg_assert_type(vg_graph *g, vg_output x, vg_dtype dt, const char *message, const char *name);

/* ---- complex numbers (src/kernels/math/complex_ops.c) and FFTs (src/kernels/math/fft_ops.c) -- */
/* Complex(real, imag): float -> complex64, double -> complex128, NumPy broadcasting.
 * Real, Imag, Angle (atan2(imag, real)), ComplexAbs (|x|): complex -> its real type;
 * Conj: complex -> complex. As TF's Python wrappers, vg_real and vg_conj of a real
 * tensor return it unchanged and vg_imag gives zeros_like; Angle and ComplexAbs take
 * complex only (INVALID_ARGUMENT), and vg_abs of a complex tensor builds ComplexAbs
 * (tf.abs). Gradients as TF's math_grad.py. Element-wise Add/Sub/Mul/RealDiv/Neg/
 * Square/Sqrt/Rsqrt/Exp/Log/Reciprocal, Equal/NotEqual, AddN, Sum/Mean/Prod, Cast and
 * the shape ops also take complex tensors (not Abs/Sign/Maximum/comparisons/Pow). */
VG_API vg_output vg_complex(vg_graph *g, vg_output real, vg_output imag, const char *name);
VG_API vg_output vg_real(vg_graph *g, vg_output x, const char *name);
VG_API vg_output vg_imag(vg_graph *g, vg_output x, const char *name);
VG_API vg_output vg_conj(vg_graph *g, vg_output x, const char *name);
VG_API vg_output vg_angle(vg_graph *g, vg_output x, const char *name);
VG_API vg_output vg_complex_abs(vg_graph *g, vg_output x, const char *name);
/* FFT, IFFT (rank 1), FFT2D/IFFT2D (rank 2), FFT3D/IFFT3D (rank 3) over the innermost
 * `rank` dims of a complex64/complex128 tensor; the inverse divides by the product of
 * the transform lengths. rank is 1, 2 or 3 (INVALID_ARGUMENT otherwise). */
VG_API vg_output vg_fft(vg_graph *g, vg_output x, int rank, const char *name);
VG_API vg_output vg_ifft(vg_graph *g, vg_output x, int rank, const char *name);
/* RFFT/RFFT2D/RFFT3D: real float/double input, fft_length an int32 vector of `rank`
 * lengths; output complex64/complex128 with the innermost dim fft_length[-1] / 2 + 1.
 * IRFFT/IRFFT2D/IRFFT3D: the inverse (complex in, real out, innermost dim
 * fft_length[-1]). As TF's kernels, an input dim longer than needed is cropped; a
 * shorter one is INVALID_ARGUMENT "Input dimension 1 must have length of at least 8 but
 * got: 5" (tf.signal.rfft pads; vg_rfft does not). */
VG_API vg_output vg_rfft(vg_graph *g, vg_output x, vg_output fft_length, int rank, const char *name);
VG_API vg_output vg_irfft(vg_graph *g, vg_output x, vg_output fft_length, int rank, const char *name);

#ifdef __cplusplus
}
#endif
#endif
