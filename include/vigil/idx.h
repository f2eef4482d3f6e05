/*
 * idx.h - reading IDX arrays (the MNIST / Fashion-MNIST file format), plain or gzip'd.
 *
 * An IDX file: two zero bytes, an element-type byte (VG_IDX_*), the number of
 * dimensions, one big-endian uint32 per dimension, then the elements big-endian (they
 * come back in host order).
 *
 * Example:
 *     #include <vigil/vigil.h>
 *     int64_t count_images(const char *path) {
 *         vg_status st;
 *         int64_t dims[4];
 *         int ndims;
 *         uint8_t *pixels;
 *         size_t nbytes;
 *         if (vg_idx_read(path, VG_IDX_U8, dims, &ndims, (void **)&pixels, &nbytes, &st) != VG_OK)
 *             return -1;
 *         vg_free(pixels);
 *         return dims[0];
 *     }
 */
#ifndef VIGIL_IDX_H
#define VIGIL_IDX_H

#include "status.h"
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element types (the third header byte). */
#define VG_IDX_ANY 0x00 /* as expected_type: accept any */
#define VG_IDX_U8 0x08
#define VG_IDX_I8 0x09
#define VG_IDX_I16 0x0B
#define VG_IDX_I32 0x0C
#define VG_IDX_F32 0x0D
#define VG_IDX_F64 0x0E

/* Reads a whole IDX file (at most 4 dimensions). expected_type is a VG_IDX_* type or
 * VG_IDX_ANY. On success dims[0..*ndims) hold the sizes and *data (freed with
 * vg_free) holds *nbytes bytes of elements in host byte order. On failure *data is
 * NULL. Fails with INVALID_ARGUMENT (a NULL argument), NOT_FOUND (path), DATA_LOSS
 * (bad magic, other element type than expected, more than 4 dimensions, short data;
 * naming the path), RESOURCE_EXHAUSTED. */
VG_API vg_code vg_idx_read(const char *path, int expected_type, int64_t dims[4], int *ndims, void **data,
                           size_t *nbytes, vg_status *st);

/* Reads only the header: element type, dims (at most 4), number of dimensions. The
 * number of records is dims[0]. Fails like vg_idx_read. */
VG_API vg_code vg_idx_header(const char *path, int *type, int64_t dims[4], int *ndims, vg_status *st);

#ifdef __cplusplus
}
#endif

#endif
