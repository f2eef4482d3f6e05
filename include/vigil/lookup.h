/*
 * vigil/lookup.h - TF 1.15's lookup tables (tf.lookup / tf.contrib.lookup) and the string
 * ops they use: tables are session resources, created by their table op (HashTableV2,
 * MutableHashTableV2) on first run and filled by an initializer op that the
 * "table_initializer" collection (tf.GraphKeys.TABLE_INITIALIZERS) lists, so that
 * vg_tables_initializer (and a monitored session's default Scaffold) runs it.
 *
 *     vg_index_table_options o = {0};
 *     o.num_oov_buckets = 1;                       // ids 0..n-1, then the OOV bucket n
 *     vg_lookup_table t = vg_index_table_from_file(g, "vocab.txt", &o, NULL);
 *     vg_output ids = vg_lookup_table_lookup(g, &t, vg_const_string(g, "lake", "w"), NULL);
 *     vg_op *init = vg_tables_initializer(g, NULL);
 *     sess = vg_session_new(g, NULL, &st);
 *     vg_session_run_targets(sess, &init, 1, &st);   // once per session
 *     vg_session_run1(sess, ids, &out, &st);         // int64 id of "lake"
 *
 * Semantics (tensorflow/core/kernels/lookup_table_op.cc, initializable_lookup_table.cc,
 * lookup_util.cc):
 *  - a static table found before its initializer ran fails with FAILED_PRECONDITION
 *    "Table not initialized."; an initializer run again is a no-op when the table already
 *    holds as many entries, else FAILED_PRECONDITION "Table was already initialized with
 *    different data." (a text-file initializer ignores that error, as TF);
 *  - one key with two different values: FAILED_PRECONDITION "HashTable has different
 *    value for same key. Key <k> has <v> and trying to add value <w>";
 *  - keys or values of the wrong dtype: INVALID_ARGUMENT "Key must be type string but got
 *    int64" (at graph build where the dtypes are known);
 *  - text files: key/value index VG_TEXT_FILE_WHOLE_LINE (-2), VG_TEXT_FILE_LINE_NUMBER
 *    (-1) or a column >= 0 of the line split at the delimiter; a missing file is
 *    NOT_FOUND, a directory, FIFO or device FAILED_PRECONDITION, a line longer than
 *    max_record_bytes (vg_set_decode_limits) RESOURCE_EXHAUSTED; an empty line, too few
 *    columns, a field that does not parse, or a file shorter than vocab_size is
 *    INVALID_ARGUMENT naming the file and line; a longer file is read up to vocab_size
 *    lines.
 * Values are scalars (no MutableHashTableOfTensors); keys: string, int32, int64; values:
 * string, int32, int64, float, double, bool.
 */
#ifndef VIGIL_LOOKUP_H
#define VIGIL_LOOKUP_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VG_TABLE_INITIALIZERS "table_initializer"
#define VG_TEXT_FILE_WHOLE_LINE (-2)
#define VG_TEXT_FILE_LINE_NUMBER (-1)

/* A table initializer (TF's KeyValueTensorInitializer / TextFileInitializer): a plain
 * value; the op is made when a table uses it. */
typedef struct vg_table_initializer {
    vg_dtype key_dtype, value_dtype;
    bool text_file;             /* else keys/values */
    vg_output keys, values;     /* key-value: 1-D tensors of one length */
    const char *filename;       /* text file: borrowed until the table is built */
    int64_t key_index, value_index;
    int64_t vocab_size;         /* -1: unknown (read the whole file) */
    char delimiter;
    const char *name;           /* scope of the init op (NULL: TF's default), borrowed */
} vg_table_initializer;

/* A table as the Python object sees it: a plain value, no ownership. handle is the
 * resource output ({NULL, 0} for a buckets-only table); initializer the init op (NULL
 * for mutable tables); num_oov_buckets > 0 makes lookups an IdTableWithHashBuckets
 * (out-of-vocabulary keys get size + Fingerprint64(as_string(key)) % num_oov_buckets). */
typedef struct vg_lookup_table {
    vg_output handle;
    vg_op *initializer;
    vg_output default_value;
    vg_dtype key_dtype, value_dtype;
    int64_t num_oov_buckets;
    const char *name;           /* the table op's name (borrowed from the graph) */
} vg_lookup_table;

/* KeyValueTensorInitializer(keys, values, name): dtypes from the outputs. */
VG_API vg_table_initializer vg_key_value_tensor_initializer(vg_output keys, vg_output values, const char *name);
/* TextFileInitializer(filename, key_dtype, key_index, value_dtype, value_index,
 * vocab_size (<= 0: unknown), delimiter (0: '\t'), name). filename is borrowed until
 * the table is built. */
VG_API vg_table_initializer vg_text_file_initializer(const char *filename, vg_dtype key_dtype, int64_t key_index,
                                                     vg_dtype value_dtype, int64_t value_index, int64_t vocab_size,
                                                     char delimiter, const char *name);

/* tf.contrib.lookup.HashTable(initializer, default_value) / StaticHashTableV1: a
 * HashTableV2 op ("hash_table" under the current scope, name NULL) and the initializer's
 * op, added to "table_initializer". A text-file initializer gives the table TF's shared
 * name "hash_table_<file>[_<vocab_size>]_<key_index>_<value_index>". default_value must
 * be a scalar of the initializer's value dtype. Failures are the graph's sticky error
 * (INVALID_ARGUMENT for mismatched dtypes); the returned table then has NULL ops. */
VG_API vg_lookup_table vg_static_hash_table(vg_graph *g, const vg_table_initializer *init, vg_output default_value,
                                            const char *name);
/* The same (TF 1.15's HashTable name). */
VG_API vg_lookup_table vg_hash_table(vg_graph *g, const vg_table_initializer *init, vg_output default_value,
                                     const char *name);
/* MutableHashTable(key_dtype, value_dtype, default_value, name NULL =
 * "MutableHashTable"): empty, filled by vg_lookup_table_insert. */
VG_API vg_lookup_table vg_mutable_hash_table(vg_graph *g, vg_dtype key_dtype, vg_dtype value_dtype,
                                             vg_output default_value, const char *name);

/* index_table_from_file / index_table_from_tensor options; zero = TF's defaults. */
typedef struct vg_index_table_options {
    int64_t num_oov_buckets;    /* >= 0 */
    int64_t vocab_size;         /* 0: unknown */
    bool has_default_value;     /* false: default_value -1 */
    int64_t default_value;
    vg_dtype key_dtype;         /* 0: VG_STRING; integer keys become an int64 table */
    bool has_columns;           /* false: key WHOLE_LINE, value LINE_NUMBER */
    int64_t key_column_index, value_column_index;
    char delimiter;             /* 0: '\t' */
} vg_index_table_options;

/* tf.contrib.lookup.index_table_from_file(vocabulary_file, ...): ops under
 * "string_to_index" (name NULL): "hash_table" (HashTableV2), "table_init"
 * (InitializeTableFromTextFileV2). opts NULL = defaults. Failures: the graph's sticky
 * error (INVALID_ARGUMENT for an empty file name, negative num_oov_buckets, vocab_size
 * < 0). */
VG_API vg_lookup_table vg_index_table_from_file(vg_graph *g, const char *vocabulary_file,
                                                const vg_index_table_options *opts, const char *name);
/* index_table_from_tensor(vocabulary_list, num_oov_buckets, default_value, dtype):
 * vocabulary_list a 1-D string (or integer) tensor; ids are positions. Duplicates fail
 * the initializer (FAILED_PRECONDITION). Uses num_oov_buckets, default_value. */
VG_API vg_lookup_table vg_index_table_from_tensor(vg_graph *g, vg_output vocabulary_list,
                                                  const vg_index_table_options *opts, const char *name);

/* index_to_string_table_from_file / _from_tensor options; zero = TF's defaults. */
typedef struct vg_index_to_string_options {
    int64_t vocab_size;         /* 0: unknown */
    const char *default_value;  /* NULL: "UNK" */
    bool has_columns;           /* false: key LINE_NUMBER, value WHOLE_LINE */
    int64_t key_column_index, value_column_index;
    char delimiter;             /* 0: '\t' */
} vg_index_to_string_options;

/* An int64 -> string table under "index_to_string" (name NULL). */
VG_API vg_lookup_table vg_index_to_string_table_from_file(vg_graph *g, const char *vocabulary_file,
                                                          const vg_index_to_string_options *opts, const char *name);
VG_API vg_lookup_table vg_index_to_string_table_from_tensor(vg_graph *g, vg_output vocabulary_list,
                                                            const char *default_value, const char *name);

/* tf.tables_initializer(name NULL = "init_all_tables"): a group of the
 * "table_initializer" collection, or a NoOp when it is empty. */
VG_API vg_op *vg_tables_initializer(vg_graph *g, const char *name);

/* table.lookup(keys): LookupTableFindV2 (scope "<table>_Lookup"), values of keys' shape;
 * with num_oov_buckets the bucket ids for keys not found. {NULL, 0} on failure (the
 * graph's sticky error: INVALID_ARGUMENT for a key dtype that is not the table's). */
VG_API vg_output vg_lookup_table_lookup(vg_graph *g, const vg_lookup_table *t, vg_output keys, const char *name);
/* table.size(): int64 scalar (LookupTableSizeV2; + num_oov_buckets). */
VG_API vg_output vg_lookup_table_size(vg_graph *g, const vg_lookup_table *t, const char *name);
/* MutableHashTable.insert(keys, values): LookupTableInsertV2 (a static table fails at run
 * time with UNIMPLEMENTED). Returns the op (NULL on failure, sticky error set). */
VG_API vg_op *vg_lookup_table_insert(vg_graph *g, const vg_lookup_table *t, vg_output keys, vg_output values,
                                     const char *name);
/* table.export(): LookupTableExportV2; out[0] the keys, out[1] the values (1-D, in
 * insertion order). Returns the op (NULL on failure). */
VG_API vg_op *vg_lookup_table_export(vg_graph *g, const vg_lookup_table *t, vg_output out[2], const char *name);

/* ---- string ops ---------------------------------------------------------- */
/* tf.string_to_hash_bucket_fast(input, num_buckets): Fingerprint64(s) % num_buckets as
 * int64, input's shape. num_buckets must be >= 1 (INVALID_ARGUMENT). */
VG_API vg_output vg_string_to_hash_bucket_fast(vg_graph *g, vg_output input, int64_t num_buckets, const char *name);
/* tf.string_to_hash_bucket_strong(input, num_buckets, key): SipHash-2-4 keyed with
 * key[0], key[1], % num_buckets. */
VG_API vg_output vg_string_to_hash_bucket_strong(vg_graph *g, vg_output input, int64_t num_buckets,
                                                 const uint64_t key[2], const char *name);
/* tf.as_string options; zero = TF's defaults (precision -1, width -1 are has_* false). */
typedef struct vg_as_string_options {
    bool has_precision;
    int precision;
    bool scientific, shortest;
    bool has_width;
    int width;
    char fill;                  /* 0: none */
} vg_as_string_options;
/* tf.as_string(input): "%d"/"%lld" for integers, "%f" for floats (or "%e" scientific,
 * "%g" shortest, with precision/width/fill), "true"/"false" for bools. opts NULL =
 * defaults. INVALID_ARGUMENT for scientific with shortest, precision on a non-float, a
 * string input. */
VG_API vg_output vg_as_string(vg_graph *g, vg_output input, const vg_as_string_options *opts, const char *name);
/* farmhash's Fingerprint64 (TF's tensorflow::Fingerprint64) of s[0..len). */
VG_API uint64_t vg_fingerprint64(const void *s, size_t len);

#ifdef __cplusplus
}
#endif
#endif
