/* array_internal.h - helpers shared by the two array op families:
 * array_shape_ops.c (which defines them; table vg__ops_array_shape) and
 * array_index_ops.c (table vg__ops_array_index). Not installed. */
#ifndef VG_ARRAY_INTERNAL_H
#define VG_ARRAY_INTERNAL_H

#include "kernels/kernel.h"
#include "vigil/ops.h"

/* Shape-function helper: sets type attr `attr` from input i's dtype if the op has
 * none, and checks they agree. INVALID_ARGUMENT "input <i> is of type <a> but attr
 * <attr> is <b>" when they do not. */
VG_HIDDEN vg_code vg__array_type_attr(vg_op *op, const char *attr, int i, vg_status *st);
/* As vg__array_type_attr for an index input, which must be int32 or int64
 * (INVALID_ARGUMENT "<what> must be int32 or int64, got <dtype>"). */
VG_HIDDEN vg_code vg__array_index_attr(vg_op *op, const char *attr, int i, const char *what, vg_status *st);
/* The build-time partial value of input i read as a 1-D shape vector (TF's
 * MakeShapeFromShapeTensor): unknown entries are -1, unknown length gives ndims -1.
 * Never fails. */
VG_HIDDEN vg_shape vg__array_shape_value(const vg_op *op, int i);
/* TF names the Consts a wrapper creates "<op>/<arg>": pushes "<unique op name>/" as
 * the graph's name scope and writes the op's name relative to the current scope into
 * rel[len]; the caller pops the scope (vg_graph_pop_scope) before building the op. */
VG_HIDDEN void vg__array_name_push(vg_graph *g, const char *name, char *rel, size_t len);
/* A Const of int dtype dt (VG_INT32 or VG_INT64) holding v[0..n): a vector, or a
 * scalar when `scalar` (n must be 1). On failure the graph's error is set and
 * {NULL, 0} returned. */
VG_HIDDEN vg_output vg__array_const_ints(vg_graph *g, vg_dtype dt, const int64_t *v, int n, bool scalar,
                                         const char *name);
/* TF's array_ops.shape(x) with dtype dt, but a Const when x's shape is fully known at
 * build time (what TF's constant folding would leave). Errors go to the graph. */
VG_HIDDEN vg_output vg__array_shape_of(vg_graph *g, vg_output x, vg_dtype dt, const char *name);

/* Shape function of the unsorted segment ops: output [num_segments (its constant value
 * or -1), data.shape[rank(segment_ids):]]. strict (UnsortedSegmentMax / Min / Prod, TF's
 * UnsortedSegmentReductionShapeFn): num_segments must be a scalar and segment_ids'
 * dimensions must agree with data's, with TF's messages; otherwise (UnsortedSegmentSum)
 * segment_ids may only not have more dimensions than data. */
VG_HIDDEN vg_code vg__array_segment_shape(vg_op *op, bool strict, vg_status *st);

/* What an unsorted segment kernel works on, from vg__array_segment_prepare. */
typedef struct vg__array_segment {
    vg_tensor *data, *ids, *out;
    int64_t num, nids, inner; /* segments, ids, elements per row */
    int64_t units;            /* segment ranges to split the work in (0: empty output) */
} vg__array_segment;
/* Checks the inputs of an unsorted segment kernel (strict: the messages of TF's
 * UnsortedSegmentReductionOp, else UnsortedSegmentSum's), allocates output 0
 * [num, data.shape[rank(ids):]] and picks the number of units (one per thread, each
 * worth at least 64k element updates, at most num). INVALID_ARGUMENT, RESOURCE_EXHAUSTED. */
VG_HIDDEN vg_code vg__array_segment_prepare(vg__kctx *ctx, bool strict, vg__array_segment *sg);
/* Writes the coordinates of flat element k of ind ("1,2"; "" for a scalar) into buf. */
VG_HIDDEN char *vg__array_index_coords(const vg_tensor *ind, int64_t k, char *buf, size_t len);

#endif
