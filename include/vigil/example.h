/*
 * vigil/example.h - tf.train.Example / SequenceExample building, TFRecord writing and
 * the parsing ops of TF's parsing_ops (ParseExample, ParseSingleExample,
 * ParseSingleSequenceExample, DecodeRaw, StringToNumber, DecodeCSV).
 *
 *     int64_t label = 3;
 *     char pixels[784] = {0};
 *     vg_example *ex = vg_example_new();
 *     vg_example_add_int64(ex, "label", &label, 1, &st);
 *     vg_example_add_bytes(ex, "image_raw", (const char *[]){pixels}, (size_t[]){784}, 1, &st);
 *     size_t len;
 *     const void *bytes = vg_example_serialize(ex, &len, &st);
 *     vg_tfrecord_writer *w = vg_tfrecord_writer_open("train.tfrecords", VG_COMPRESSION_NONE, &st);
 *     vg_tfrecord_writer_write(w, bytes, len, &st);
 *     vg_tfrecord_writer_close(w, &st);
 *     vg_example_free(ex);
 *
 * Serialized bytes are what TF's proto serializer writes for the same message (features
 * in the order they were added; Int64List and FloatList packed).
 */
#ifndef VIGIL_EXAMPLE_H
#define VIGIL_EXAMPLE_H
#include "graph.h"
#ifdef __cplusplus
extern "C" {
#endif

/* ---- tf.train.Example --------------------------------------------------- */
typedef struct vg_example vg_example;

/* A new empty Example (Features with no feature). NULL on allocation failure.
 * Ownership: free with vg_example_free. Not thread-safe. */
VG_API vg_example *vg_example_new(void);
VG_API void vg_example_free(vg_example *ex); /* NULL is a no-op */
/* Removes every feature (keeps the memory). */
VG_API void vg_example_clear(vg_example *ex);
/* Adds feature `key` holding n values (copied; n may be 0: an empty list). Fail with
 * INVALID_ARGUMENT (NULL/empty key, NULL values with n > 0), ALREADY_EXISTS (key added
 * before), RESOURCE_EXHAUSTED. */
VG_API vg_code vg_example_add_int64(vg_example *ex, const char *key, const int64_t *v, size_t n, vg_status *st);
VG_API vg_code vg_example_add_float(vg_example *ex, const char *key, const float *v, size_t n, vg_status *st);
VG_API vg_code vg_example_add_bytes(vg_example *ex, const char *key, const char *const *v, const size_t *lens,
                                    size_t n, vg_status *st);
/* The serialized Example, borrowed until the example is changed or freed. NULL (and
 * RESOURCE_EXHAUSTED) on allocation failure. */
VG_API const void *vg_example_serialize(vg_example *ex, size_t *len, vg_status *st);

/* ---- tf.train.SequenceExample ------------------------------------------- */
typedef struct vg_sequence_example vg_sequence_example;

VG_API vg_sequence_example *vg_sequence_example_new(void);
VG_API void vg_sequence_example_free(vg_sequence_example *se);
/* The context Features, as an example to add to (borrowed; owned by se). */
VG_API vg_example *vg_sequence_example_context(vg_sequence_example *se);
/* Appends one step (a Feature of n values) to feature list `key` (created on first
 * use). A list keeps one kind: INVALID_ARGUMENT when a step of another kind is
 * appended; also INVALID_ARGUMENT for a NULL/empty key, RESOURCE_EXHAUSTED. */
VG_API vg_code vg_sequence_example_append_int64(vg_sequence_example *se, const char *key, const int64_t *v, size_t n,
                                                vg_status *st);
VG_API vg_code vg_sequence_example_append_float(vg_sequence_example *se, const char *key, const float *v, size_t n,
                                                vg_status *st);
VG_API vg_code vg_sequence_example_append_bytes(vg_sequence_example *se, const char *key, const char *const *v,
                                                const size_t *lens, size_t n, vg_status *st);
/* Serialized SequenceExample, borrowed until se is changed or freed. */
VG_API const void *vg_sequence_example_serialize(vg_sequence_example *se, size_t *len, vg_status *st);

/* ---- TFRecord writer (tf.io.TFRecordWriter) ------------------------------ */
typedef enum vg_compression {
    VG_COMPRESSION_NONE = 0, /* "" */
    VG_COMPRESSION_ZLIB = 1, /* "ZLIB": one zlib stream over all records */
    VG_COMPRESSION_GZIP = 2  /* "GZIP": one gzip stream over all records */
} vg_compression;

/* TF's compression_type strings: "" / "ZLIB" / "GZIP". INVALID_ARGUMENT otherwise, and
 * for a NULL out. */
VG_API vg_code vg_compression_parse(const char *s, vg_compression *out, vg_status *st);

typedef struct vg_tfrecord_writer vg_tfrecord_writer;
/* Creates (truncates) path. Fails with NOT_FOUND (missing directory), PERMISSION_DENIED
 * and the other errno codes (naming the path), INVALID_ARGUMENT (bad compression),
 * RESOURCE_EXHAUSTED. Ownership: close with vg_tfrecord_writer_close. */
VG_API vg_tfrecord_writer *vg_tfrecord_writer_open(const char *path, vg_compression compression, vg_status *st);
/* Appends one record (data borrowed for the call). Fails with RESOURCE_EXHAUSTED
 * (ENOSPC, memory), UNKNOWN (EIO), FAILED_PRECONDITION after an earlier failure. */
VG_API vg_code vg_tfrecord_writer_write(vg_tfrecord_writer *w, const void *data, size_t len, vg_status *st);
/* Flushes buffered records to the OS (for compressed files: a zlib full flush). */
VG_API vg_code vg_tfrecord_writer_flush(vg_tfrecord_writer *w, vg_status *st);
/* Finishes the stream, closes and frees (always frees; returns the first error). NULL
 * is a no-op. */
VG_API vg_code vg_tfrecord_writer_close(vg_tfrecord_writer *w, vg_status *st);

/* ---- TFRecord iterator (tf.python_io.tf_record_iterator) ---------------- */
/* Reads the records of one TFRecord file in order, outside any graph (as TF's
 * tf_record_iterator(path, options)); compression as the file was written.
 *
 *     vg_tfrecord_iterator *it = vg_tfrecord_iterator_open("train.tfrecords", VG_COMPRESSION_NONE, &st);
 *     const void *rec;
 *     size_t n;
 *     while (it && vg_tfrecord_iterator_next(it, &rec, &n, &st) == VG_OK) {
 *         // rec[0..n) is one serialized record, valid until the next call
 *     }
 *     vg_tfrecord_iterator_close(it);  // st.code: VG_OUT_OF_RANGE after the last record
 */
typedef struct vg_tfrecord_iterator vg_tfrecord_iterator;
/* Opens path. Fails (NULL, *st set) with NOT_FOUND naming the file, the other errno codes,
 * INVALID_ARGUMENT (a NULL path, a bad compression), RESOURCE_EXHAUSTED. Ownership: the
 * caller closes it with vg_tfrecord_iterator_close. */
VG_API vg_tfrecord_iterator *vg_tfrecord_iterator_open(const char *path, vg_compression compression,
                                                       vg_status *st);
/* The next record: *data (borrowed, valid until the next call on it or its close) and
 * *len. Returns VG_OK; VG_OUT_OF_RANGE after the last record (TF's StopIteration);
 * VG_DATA_LOSS "truncated record at offset N in F" (the file ends inside a record) or
 * "corrupted record at offset N in F: ... checksum mismatch" (TF's DataLossError), or a
 * corrupt compressed stream; RESOURCE_EXHAUSTED for a record over the decode limit
 * (vg_set_decode_limits); INVALID_ARGUMENT for NULL arguments. After an error other than
 * OUT_OF_RANGE the iterator stays at the failing record. */
VG_API vg_code vg_tfrecord_iterator_next(vg_tfrecord_iterator *it, const void **data, size_t *len, vg_status *st);
/* Closes and frees it (NULL: no-op). */
VG_API void vg_tfrecord_iterator_close(vg_tfrecord_iterator *it);

/* ---- parsing ops (graph builders; failures are the graph's sticky error) ---- */

/* A FixedLenFeature (dense_shape, dtype, default) or VarLenFeature (dtype) request.
 * dtype is VG_INT64, VG_FLOAT or VG_STRING. For a fixed-length feature,
 * default_value {NULL, 0} makes it required (a record without it fails with
 * INVALID_ARGUMENT naming the record and the feature); else default_value must have
 * the dtype and dense_shape's element count (or be a scalar broadcast). */
typedef struct vg_feature_spec {
    const char *key;
    vg_dtype dtype;
    bool var_len;       /* VarLenFeature: sparse output */
    vg_shape shape;     /* FixedLenFeature's shape (fully defined) */
    vg_output default_value;
} vg_feature_spec;

/* Sparse outputs of a VarLenFeature: indices int64 [N, rank], values [N],
 * dense_shape int64 [rank] (as tf.SparseTensor). */
typedef struct vg_sparse_output {
    vg_output indices, values, dense_shape;
} vg_sparse_output;

/* tf.io.parse_example (the ParseExample op): serialized = string vector [B] (names may
 * be {NULL, 0}: no names). Output for spec i: dense[i] = [B] + shape (FixedLen) or
 * sparse[i] with rank-2 indices (batch, index) (VarLen). dense and sparse are arrays of
 * n (entries of the other kind are left {NULL,0}). Run-time errors INVALID_ARGUMENT:
 * malformed record ("Could not parse example input, value: ..."), a required feature
 * missing ("Name: <name>, Feature: <key> is required but could not be found."), a wrong
 * type or count. Returns the op (NULL on failure). */
VG_API vg_op *vg_parse_example(vg_graph *g, vg_output serialized, vg_output names, const vg_feature_spec *specs,
                               int n, vg_output *dense, vg_sparse_output *sparse, const char *name);
/* tf.io.parse_single_example (ParseSingleExample op): serialized is a string scalar;
 * dense[i] has the spec's shape; sparse indices are [N, 1]. */
VG_API vg_op *vg_parse_single_example(vg_graph *g, vg_output serialized, const vg_feature_spec *specs, int n,
                                      vg_output *dense, vg_sparse_output *sparse, const char *name);

/* A sequence feature: FixedLenSequenceFeature(shape, dtype, allow_missing) (dense
 * output [T] + shape over the T steps of the feature list) or VarLenFeature (var_len:
 * sparse output, indices (step, position), dense_shape [T, longest step]). */
typedef struct vg_sequence_feature_spec {
    const char *key;
    vg_dtype dtype;
    bool var_len;
    vg_shape shape;
    bool allow_missing; /* a missing list gives [0] + shape; else INVALID_ARGUMENT */
} vg_sequence_feature_spec;

/* tf.io.parse_single_sequence_example (ParseSingleSequenceExample op): serialized is a
 * string scalar; context features as vg_parse_single_example; outputs per spec in
 * context_dense/context_sparse (ncontext entries) and sequence_dense/sequence_sparse
 * (nsequence entries). Run-time INVALID_ARGUMENT for a malformed record, a missing
 * required feature or feature list ("Name: <unknown>, Feature list '<key>' is required
 * but could not be found. ..."), a wrong type, or a step with the wrong value count.
 * Returns the op. */
VG_API vg_op *vg_parse_single_sequence_example(vg_graph *g, vg_output serialized, const vg_feature_spec *context,
                                               int ncontext, const vg_sequence_feature_spec *sequence, int nsequence,
                                               vg_output *context_dense, vg_sparse_output *context_sparse,
                                               vg_output *sequence_dense, vg_sparse_output *sequence_sparse,
                                               const char *name);

/* tf.io.decode_raw(bytes, out_type, little_endian): output = bytes.shape + [len /
 * sizeof(out_type)]. Run-time INVALID_ARGUMENT when the lengths differ between elements
 * or are not a multiple of the type size. out_type: float, double, int32, uint8, int64. */
VG_API vg_output vg_decode_raw(vg_graph *g, vg_output bytes, vg_dtype out_type, bool little_endian, const char *name);
/* tf.strings.to_number (StringToNumber): out_type float, double, int32 or int64.
 * INVALID_ARGUMENT "StringToNumberOp could not correctly convert string: <s>". */
VG_API vg_output vg_string_to_number(vg_graph *g, vg_output strings, vg_dtype out_type, const char *name);
/* tf.io.decode_csv (DecodeCSV): records is a string tensor; record_defaults[i] a
 * tensor of 0 (required column) or 1 element whose dtype is column i's type (int32,
 * int64, float, double, string). outputs[i] has records' shape. field_delim NULL =
 * ","; na_value NULL = "". Run-time INVALID_ARGUMENT for wrong field counts, bad
 * numbers, missing required fields, bad quoting (naming the record). Returns the op. */
VG_API vg_op *vg_decode_csv(vg_graph *g, vg_output records, const vg_output *record_defaults, int n,
                            const char *field_delim, bool use_quote_delim, const char *na_value,
                            vg_output *outputs, const char *name);
/* tf.string_split(source, delimiter, skip_empty) (the StringSplit op): source is a
 * string vector [N]; every byte of delimiter (NULL = " ") separates tokens, an empty
 * delimiter splits into single bytes; skip_empty drops empty tokens. *out (may be NULL)
 * gets the SparseTensor: indices int64 [T, 2] (row, position), values string [T],
 * dense_shape int64 {N, the most tokens in a row}. A source that is not a vector is
 * INVALID_ARGUMENT (graph error when its rank is known, run-time otherwise). Returns
 * the op (NULL on failure). */
VG_API vg_op *vg_string_split(vg_graph *g, vg_output source, const char *delimiter, bool skip_empty,
                              vg_sparse_output *out, const char *name);
/* tf.strings.split(source, sep, maxsplit) with result_type "SparseTensor" (the
 * StringSplitV2 op): Python's str.split per element of the string vector source. A
 * non-empty sep is one whole separator string, empty tokens kept ("1,,2" -> "1", "",
 * "2"; "" -> one token ""); sep NULL or "" splits at runs of ASCII whitespace with no
 * empty tokens ("" or "  " -> none). maxsplit > 0: at most that many splits, the rest
 * is the last token; 0: no split; -1: unlimited. *out (may be NULL) as for
 * vg_string_split. A source that is not a vector is INVALID_ARGUMENT (graph error
 * when its rank is known, run-time otherwise). Returns the op (NULL on failure). */
VG_API vg_op *vg_string_split_v2(vg_graph *g, vg_output source, const char *sep, int64_t maxsplit,
                                 vg_sparse_output *out, const char *name);

#ifdef __cplusplus
}
#endif
#endif
