/*
 * vigil/npy.h - NumPy's .npy array files (numpy.save / numpy.load, format versions
 * 1.0, 2.0 and 3.0), for feeding and fetching tensors from the command line
 * (`vigil run --input x=x.npy --outdir DIR`) and from programs that trade arrays with
 * Python.
 *
 * A .npy file: "\x93NUMPY", major and minor version bytes, the header length (2 bytes
 * little-endian in 1.0, 4 bytes in 2.0 and 3.0), a Python dict literal
 * {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with spaces and a
 * newline so that the data starts at a multiple of 64, then the elements.
 *
 * Element types: '<f4' float, '<f8' double, '<i4' int32, '<i8' int64, '|u1' uint8,
 * '|b1' bool (read in either byte order, '>' swapped), and '|S<n>' fixed-width byte
 * strings as string tensors (trailing NUL bytes dropped, as NumPy does). Fortran-order
 * arrays are read into row-major tensors. Other types (int16, float16, unicode '<U',
 * objects '|O', complex, structured) are UNIMPLEMENTED naming the descr.
 *
 *     #include <vigil/vigil.h>
 *     int roundtrip(const char *path) {
 *         vg_status st;
 *         vg_tensor *t = vg_npy_read(path, &st);
 *         if (!t) return st.code;
 *         vg_code c = vg_npy_write("/tmp/copy.npy", t, &st);
 *         vg_tensor_free(t);
 *         return c;
 *     }
 */
#ifndef VIGIL_NPY_H
#define VIGIL_NPY_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Parses the bytes of a .npy file into a new tensor (the caller frees it). name is used
 * in messages (NULL: "npy"). Fails (NULL) with DATA_LOSS (bad magic, version, header
 * syntax, missing keys, data shorter than the shape needs; naming `name`),
 * UNIMPLEMENTED (element type, rank above VG_MAX_DIMS), INVALID_ARGUMENT (NULL bytes),
 * RESOURCE_EXHAUSTED. Sizes are checked against len before anything is allocated. */
VG_API vg_tensor *vg_npy_parse(const void *bytes, size_t len, const char *name, vg_status *st);
/* Reads a .npy file. Also NOT_FOUND (naming the path). */
VG_API vg_tensor *vg_npy_read(const char *path, vg_status *st);

/* Serializes t exactly as numpy.save writes it (format 1.0, or 2.0 when the header
 * would not fit 1.0's 65535 bytes): *bytes (free with vg_free), *len. String tensors
 * become '|S<n>' with n the longest element (at least 1). Fails with INVALID_ARGUMENT
 * (NULL, VG_RESOURCE tensors), RESOURCE_EXHAUSTED. */
VG_API vg_code vg_npy_serialize(const vg_tensor *t, void **bytes, size_t *len, vg_status *st);
/* Writes t to path (temp file + rename). Fails as vg_npy_serialize, plus I/O codes. */
VG_API vg_code vg_npy_write(const char *path, const vg_tensor *t, vg_status *st);

/* ---- .npz archives (numpy.savez / savez_compressed, numpy.load) ----------
 * A ZIP archive of "<key>.npy" members, stored or deflated (read and written with
 * libzip). Members whose names do not end in ".npy" are skipped, as numpy.load does.
 *
 *     vg_npz *z = vg_npz_open("mnist.npz", &st);
 *     vg_tensor *x = z ? vg_npz_get(z, "x_train", &st) : NULL;   // a new tensor
 *     vg_tensor_free(x);
 *     vg_npz_close(z);
 */
typedef struct vg_npz vg_npz;
/* Opens the archive at path (read whole into memory). Fails (NULL) with NOT_FOUND (naming
 * the path), DATA_LOSS (not a ZIP archive, an inconsistent one), INVALID_ARGUMENT (NULL),
 * RESOURCE_EXHAUSTED. Ownership: close with vg_npz_close. */
VG_API vg_npz *vg_npz_open(const char *path, vg_status *st);
/* The same from bytes[0..len) (copied; name is used in messages, NULL: "npz"). */
VG_API vg_npz *vg_npz_parse(const void *bytes, size_t len, const char *name, vg_status *st);
/* Number of arrays; the key of array i ("x_train" for member "x_train.npy"), borrowed
 * from z, NULL when i is out of range. */
VG_API int vg_npz_count(const vg_npz *z);
VG_API const char *vg_npz_key(const vg_npz *z, int i);
/* A new tensor (the caller frees it) from array key. Fails (NULL) with NOT_FOUND (no such
 * key, naming it), DATA_LOSS (a corrupt member: CRC, size, .npy header; naming the
 * member), RESOURCE_EXHAUSTED (a member over max_record_bytes of vg_set_decode_limits,
 * checked before allocating), UNIMPLEMENTED (an element type vg_npy_parse lacks). */
VG_API vg_tensor *vg_npz_get(vg_npz *z, const char *key, vg_status *st);
/* Frees z (NULL: no-op). */
VG_API void vg_npz_close(vg_npz *z);
/* numpy.savez(path, key0=t0, ...) (compressed = false) or savez_compressed (true): n
 * arrays, keys and tensors borrowed. Fails with INVALID_ARGUMENT (NULL or empty key,
 * VG_RESOURCE tensors), NOT_FOUND (missing directory), RESOURCE_EXHAUSTED (disk full,
 * memory), UNKNOWN (other I/O). */
VG_API vg_code vg_npz_write(const char *path, const char *const *keys, const vg_tensor *const *tensors, int n,
                            bool compressed, vg_status *st);

/* ---- pickled dicts of arrays (pickle.load of what NumPy programs dump) ------
 * The top-level dict of a pickle (protocols 2-5, as Python 2's cPickle and Python 3 write
 * them) whose values are NumPy arrays, lists/tuples of ints, floats or strings, ints and
 * strings: e.g. the CIFAR-10 "python version" batches. A restricted reader: it builds
 * data only and calls nothing; the only globals it accepts are NumPy's array
 * reconstructors and _codecs.encode. Keys are the dict's str/bytes keys.
 *
 *     vg_pickle_dict *d = vg_pickle_dict_read("data_batch_1", &st);
 *     vg_tensor *x = d ? vg_pickle_dict_get(d, "data", &st) : NULL;   // uint8 [10000, 3072]
 *     vg_tensor_free(x);
 *     vg_pickle_dict_free(d);
 */
typedef struct vg_pickle_dict vg_pickle_dict;
/* Reads path / parses bytes[0..len) (copied; name for messages, NULL: "pickle"). Fails
 * (NULL) with NOT_FOUND (path), DATA_LOSS (malformed, naming the offset),
 * UNIMPLEMENTED (an opcode or global outside the subset, a key that is not a string,
 * naming it), INVALID_ARGUMENT (NULL; a top-level value that is not a dict),
 * RESOURCE_EXHAUSTED. Ownership: vg_pickle_dict_free. */
VG_API vg_pickle_dict *vg_pickle_dict_read(const char *path, vg_status *st);
VG_API vg_pickle_dict *vg_pickle_dict_parse(const void *bytes, size_t len, const char *name, vg_status *st);
/* Number of keys and the i-th (borrowed; NULL out of range). */
VG_API int vg_pickle_dict_count(const vg_pickle_dict *d);
VG_API const char *vg_pickle_dict_key(const vg_pickle_dict *d, int i);
/* The value of key as a new tensor (the caller frees it): an array with its NumPy dtype
 * (float32/64, int32/64, uint8, bool, float16; either byte order, C or Fortran order,
 * returned row-major), a list of ints -> int64 [n], of floats -> double [n], of strings
 * -> string [n], an int -> int64 scalar, a string -> string scalar. Fails with NOT_FOUND
 * (no such key), UNIMPLEMENTED (another kind of value or dtype, naming the key),
 * DATA_LOSS (an array whose bytes do not fit its shape), RESOURCE_EXHAUSTED. */
VG_API vg_tensor *vg_pickle_dict_get(const vg_pickle_dict *d, const char *key, vg_status *st);
/* Frees d (NULL: no-op). */
VG_API void vg_pickle_dict_free(vg_pickle_dict *d);

#ifdef __cplusplus
}
#endif
#endif
