/*
 * vigil/tensor.h - dtypes, shapes and reference-counted tensors.
 *
 * A tensor is an n-dimensional array with a dtype, a shape and a data buffer aligned
 * to 64 bytes. Tensors are reference counted: vg_tensor_new* gives you one reference,
 * vg_tensor_ref adds one, vg_tensor_free drops one and frees at zero.
 *
 *     int64_t dims[2] = {2, 3};
 *     vg_tensor *t = vg_tensor_new(VG_FLOAT, dims, 2, &st);
 *     float *x = vg_tensor_data(t);
 *     for (int i = 0; i < 6; i++) x[i] = (float)i;
 *     ...
 *     vg_tensor_free(t);
 *
 * String tensors (VG_STRING) hold an array of byte strings; use vg_tensor_string /
 * vg_tensor_set_string rather than the raw buffer.
 */
#ifndef VIGIL_TENSOR_H
#define VIGIL_TENSOR_H

#include "status.h"
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* dtypes: TensorFlow's DataType numbers. */
typedef enum vg_dtype {
    VG_DTYPE_INVALID = 0,
    VG_FLOAT = 1,
    VG_DOUBLE = 2,
    VG_INT32 = 3,
    VG_UINT8 = 4,
    VG_STRING = 7,
    VG_COMPLEX64 = 8, /* interleaved (re, im) float pairs: C's float _Complex layout */
    VG_INT64 = 9,
    VG_BOOL = 10,
    VG_COMPLEX128 = 18, /* interleaved (re, im) double pairs: C's double _Complex layout */
    VG_BFLOAT16 = 14, /* bfloat16 storage (TF's DT_BFLOAT16: the top 16 bits of a float32); Cast to/from
                         float to compute */
    VG_HALF = 19,    /* IEEE-754 binary16 storage (TF's DT_HALF); Cast to/from float to compute */
    VG_RESOURCE = 20 /* internal handles (queues); not feedable from C */
} vg_dtype;

/* Bytes per element (0 for VG_STRING and invalid dtypes). */
VG_API size_t vg_dtype_size(vg_dtype dt);
/* TensorFlow's name: "float", "int64", "string", "complex64", ... ("invalid" if unknown). */
VG_API const char *vg_dtype_name(vg_dtype dt);
/* VG_HALF elements are IEEE-754 binary16 bit patterns (uint16_t). vg_half_to_float is
 * exact; vg_float_to_half rounds to nearest even (subnormals kept, overflow to +-inf,
 * NaN stays a quiet NaN), bit-identical to the Cast op and to F16C. */
VG_API float vg_half_to_float(uint16_t h);
VG_API uint16_t vg_float_to_half(float f);
/* VG_BFLOAT16 elements are the high 16 bits of a float32 (uint16_t). vg_bfloat16_to_float
 * is exact; vg_float_to_bfloat16 rounds to nearest even as TF's bfloat16(float) does
 * (round_to_bfloat16: overflow to +-inf, subnormals kept), and gives TF's quiet NaN 0x7fc0
 * for every NaN. Bit-identical to the Cast op. */
VG_API float vg_bfloat16_to_float(uint16_t b);
VG_API uint16_t vg_float_to_bfloat16(float f);

/* ------------------------------------------------------------------------ */
/* Shapes. ndims == -1: unknown rank. dims[i] == -1: unknown dimension. */
#define VG_MAX_DIMS 8

typedef struct vg_shape {
    int ndims;
    int64_t dims[VG_MAX_DIMS];
} vg_shape;

/* A shape from a dims array (ndims <= VG_MAX_DIMS; larger is clamped). */
VG_API vg_shape vg_shape_make(const int64_t *dims, int ndims);
VG_API vg_shape vg_shape_unknown(void);
/* True if the rank and every dimension are known. */
VG_API bool vg_shape_is_fully_defined(const vg_shape *s);
/* Element count; -1 if not fully defined or when the product overflows int64 (checked:
 * no signed overflow). */
VG_API int64_t vg_shape_num_elements(const vg_shape *s);
/* Writes "[2,?,3]" / "<unknown>" into buf; returns buf. */
VG_API char *vg_shape_str(const vg_shape *s, char *buf, size_t len);

/* ------------------------------------------------------------------------ */
/* Tensors. */
typedef struct vg_tensor vg_tensor;

/* A deallocator for caller memory wrapped by vg_tensor_new_from. */
typedef void (*vg_dealloc_fn)(void *data, size_t len, void *payload);

/* New tensor with uninitialised data (strings start empty).
 * Ownership: the caller owns the returned reference (vg_tensor_free).
 * Fails with: INVALID_ARGUMENT (bad dtype, negative dim, ndims > VG_MAX_DIMS),
 * RESOURCE_EXHAUSTED. */
VG_API vg_tensor *vg_tensor_new(vg_dtype dt, const int64_t *dims, int ndims, vg_status *st);

/* New tensor whose data is zero (strings empty). Same as vg_tensor_new otherwise. */
VG_API vg_tensor *vg_tensor_new_zeros(vg_dtype dt, const int64_t *dims, int ndims, vg_status *st);

/* New scalar tensors holding one value. Fail with RESOURCE_EXHAUSTED. */
VG_API vg_tensor *vg_tensor_new_scalar_f32(float v, vg_status *st);
VG_API vg_tensor *vg_tensor_new_scalar_i64(int64_t v, vg_status *st);
VG_API vg_tensor *vg_tensor_new_scalar_i32(int32_t v, vg_status *st);
VG_API vg_tensor *vg_tensor_new_scalar_bool(bool v, vg_status *st);
VG_API vg_tensor *vg_tensor_new_string_scalar(const char *s, size_t len, vg_status *st);

/* New tensor copying len bytes from data (numeric dtypes only; len must equal
 * elements * dtype size). Fails with INVALID_ARGUMENT, RESOURCE_EXHAUSTED. */
VG_API vg_tensor *vg_tensor_new_copy(vg_dtype dt, const int64_t *dims, int ndims,
                                     const void *data, size_t len, vg_status *st);

/* Wraps caller memory without copying (numeric dtypes). When the last reference
 * goes, dealloc(data, len, payload) is called (dealloc may be NULL: the caller keeps
 * ownership and must keep data alive as long as the tensor lives). data need not be
 * 64-byte aligned. On failure dealloc is NOT called: the caller still owns data.
 * Fails with INVALID_ARGUMENT (len mismatch), RESOURCE_EXHAUSTED. */
VG_API vg_tensor *vg_tensor_new_from(vg_dtype dt, const int64_t *dims, int ndims, void *data,
                                     size_t len, vg_dealloc_fn dealloc, void *payload,
                                     vg_status *st);

/* Adds a reference; returns t. Thread-safe. NULL is allowed. */
VG_API vg_tensor *vg_tensor_ref(vg_tensor *t);
/* Drops a reference; frees data and struct at zero. Thread-safe. NULL is a no-op. */
VG_API void vg_tensor_free(vg_tensor *t);
/* A deep copy with a fresh buffer (one reference). Fails with RESOURCE_EXHAUSTED. */
VG_API vg_tensor *vg_tensor_copy(const vg_tensor *t, vg_status *st);

VG_API vg_dtype vg_tensor_dtype(const vg_tensor *t);
VG_API int vg_tensor_ndims(const vg_tensor *t);
VG_API int64_t vg_tensor_dim(const vg_tensor *t, int i);
VG_API const int64_t *vg_tensor_dims(const vg_tensor *t);
VG_API vg_shape vg_tensor_shape(const vg_tensor *t);
VG_API int64_t vg_tensor_num_elements(const vg_tensor *t);
/* Byte size of the data buffer (elements * dtype size; for strings, elements *
 * sizeof internal slot). */
VG_API size_t vg_tensor_nbytes(const vg_tensor *t);
/* The data buffer, borrowed for the tensor's lifetime. Writing is allowed only while
 * you hold the only reference (or you know nobody reads concurrently). */
VG_API void *vg_tensor_data(const vg_tensor *t);

/* String element i: returns a borrowed pointer (valid until the element is set again
 * or the tensor is freed) and its length in *len. NULL if out of range. */
VG_API const char *vg_tensor_string(const vg_tensor *t, int64_t i, size_t *len);
/* Sets string element i to a copy of s[0..len). Fails with INVALID_ARGUMENT,
 * RESOURCE_EXHAUSTED. */
VG_API vg_code vg_tensor_set_string(vg_tensor *t, int64_t i, const char *s, size_t len,
                                    vg_status *st);

/* Scalar convenience: value of element 0 converted to double (numeric/bool dtypes; the
 * real part of a complex one). */
VG_API double vg_tensor_scalar(const vg_tensor *t);

#ifdef __cplusplus
}
#endif
#endif
