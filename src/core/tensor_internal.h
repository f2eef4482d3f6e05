/* tensor_internal.h - tensor internals for the layers above core (copy-on-write,
 * zero-copy reshapes); implemented in tensor.c. Not installed. */
#ifndef VG_TENSOR_INTERNAL_H
#define VG_TENSOR_INTERNAL_H

#include "core/core.h"
#include "vigil/tensor.h"

/* Reference count (for copy-on-write decisions). */
VG_HIDDEN int vg__tensor_refcount(const vg_tensor *t);
/* A new tensor (one reference) viewing t's data with another shape of the same element
 * count, without copying (Reshape, ExpandDims, Squeeze). Fails with INVALID_ARGUMENT,
 * RESOURCE_EXHAUSTED. */
VG_HIDDEN vg_tensor *vg__tensor_alias(vg_tensor *t, const int64_t *dims, int ndims, vg_status *st);


#endif
