/*
 * vigil/import.h - importing TensorFlow graphs: GraphDef (binary or text) in the spirit
 * of TF_GraphImportGraphDef / tf.import_graph_def.
 *
 *     vg_graph *g = vg_graph_new();
 *     vg_output y;
 *     vg_import_options o = {0};
 *     o.n_return_tensors = 1;
 *     o.return_tensors = (const char *[]){"y_hat:0"};
 *     o.return_tensors_out = &y;
 *     if (vg_graph_import_graph_def_file(g, "model.pb", &o, &st) != VG_OK) return st.code;
 *
 * What import does, as TF does:
 *  - Nodes may come in any order; they are created in dependency order (data and
 *    control inputs). Node names get "prefix/" when a prefix is given (and the graph's
 *    current name scope in front, as any op); inputs are renamed with them; "_class"
 *    colocation attrs ("loc:@x") too. A name that already exists in the graph fails.
 *  - Legacy op types are mapped when vigil has no op of the old name: Variable ->
 *    VariableV2, Div on floats -> RealDiv, Concat(dim, values) -> ConcatV2(values, dim),
 *    BatchMatMul -> BatchMatMulV2, Inv -> Reciprocal, InvGrad -> ReciprocalGrad.
 *  - versions {producer, min_consumer, bad_consumers} are checked as TF 1.15 does
 *    (consumer version VG_GRAPH_DEF_VERSION).
 *  - "_output_shapes" attrs are dropped (vigil infers shapes; export writes them again);
 *    device strings are kept (informational) unless clear_devices.
 *  - Attrs of every TF type are read (scalars, type, shape, string, tensor with
 *    tensor_content or typed fields, lists); bool and tensor lists, func and
 *    placeholder attrs fail with UNIMPLEMENTED naming the node and attr.
 *
 * Errors (st gets a message naming the source and the culprit):
 *  - DATA_LOSS: truncated or malformed protobuf;
 *  - INVALID_ARGUMENT: text syntax error (line), input referring to a node that is not
 *    in the GraphDef (both names), a cycle, a bad input spec, a name clash, a tensor
 *    whose contents do not match its shape or whose size exceeds max_tensor_bytes
 *    (checked before allocating), input_map keys not found, return element not found,
 *    versions rejected;
 *  - UNIMPLEMENTED: op types vigil does not have: ALL of them with their nodes in one
 *    message ("op types vigil cannot run: Foo (nodes a, b); Bar (node c)"); also
 *    unsupported dtypes and attr kinds;
 *  - RESOURCE_EXHAUSTED.
 * Import validates the whole GraphDef (parse, op types, inputs, cycles) before adding
 * any op; an error found while building (a shape function rejecting its inputs) leaves
 * the ops built so far in the graph and is also recorded as the graph's sticky error.
 */
#ifndef VIGIL_IMPORT_H
#define VIGIL_IMPORT_H

#include "graphdef.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The GraphDef consumer version vigil reads like (TF 1.15's TF_GRAPH_DEF_VERSION). */
#define VG_GRAPH_DEF_VERSION 134
#define VG_GRAPH_DEF_VERSION_MIN_PRODUCER 0

typedef enum vg_import_format { VG_IMPORT_AUTO = 0, VG_IMPORT_BINARY = 1, VG_IMPORT_TEXT = 2 } vg_import_format;

/* All fields optional (zero-initialize). Arrays are borrowed for the call. */
typedef struct vg_import_options {
    const char *prefix;       /* names become "prefix/name" (NULL or "": unchanged) */
    const char *source;       /* named in error messages (a file path); NULL: "GraphDef" */
    vg_import_format format;  /* AUTO: text when the bytes are printable text */
    bool clear_devices;       /* drop device strings */
    int64_t max_tensor_bytes; /* largest tensor attr to materialize; 0: 1 GiB */
    /* input_map: GraphDef tensor names ("x:0", "x" = "x:0") replaced by the caller's
     * outputs; "^x" keys replace control inputs on x by control inputs on value.op. */
    int n_input_map;
    const char *const *input_map_keys;
    const vg_output *input_map_values;
    /* return elements, by GraphDef name (before prefix); filled on success. */
    int n_return_tensors;
    const char *const *return_tensors; /* "y:0", "y" = "y:0" */
    vg_output *return_tensors_out;     /* caller array of n_return_tensors */
    int n_return_ops;
    const char *const *return_ops;     /* op names */
    vg_op **return_ops_out;            /* caller array of n_return_ops */
    /* Function calls (nodes whose op is a function of GraphDef.library, or a
     * (Stateful)PartitionedCall naming one) are inlined (docs/import.md): at most this
     * many nodes are added; 0: 4 per NodeDef of the input, at least 4096. More gives
     * RESOURCE_EXHAUSTED. */
    int64_t max_inlined_nodes;
} vg_import_options;

/* Imports a serialized GraphDef (bytes, len) into g. opts may be NULL. The bytes are
 * only read during the call. Codes as listed above. This is also the fuzz entry point:
 * any bytes give a status, never a crash or an allocation beyond max_tensor_bytes per
 * tensor plus a small multiple of len. */
VG_API vg_code vg_graph_import_graph_def(vg_graph *g, const void *bytes, size_t len, const vg_import_options *opts,
                                         vg_status *st);
/* Reads path (".pbtxt"/".txt" force text; otherwise AUTO unless opts says) and
 * imports it; errors name the file. Also fails with the file's errno code. */
VG_API vg_code vg_graph_import_graph_def_file(vg_graph *g, const char *path, const vg_import_options *opts,
                                              vg_status *st);

/* The op types of a GraphDef that vigil cannot create (after legacy mapping), without
 * building anything: *types gets a vg_malloc'd array of n vg_malloc'd strings "Type"
 * (first-seen order) and *counts (may be NULL) the node count of each; free with
 * vg_import_free_strings. Fails with DATA_LOSS, INVALID_ARGUMENT (text syntax; NULL
 * types or n; NULL bytes with len > 0), RESOURCE_EXHAUSTED. */
VG_API vg_code vg_graph_def_missing_ops(const void *bytes, size_t len, vg_import_format format, char ***types,
                                        int **counts, int *n, vg_status *st);
/* Every op type of a GraphDef as written (first-seen order) with its node count; same
 * conventions and codes as vg_graph_def_missing_ops. */
VG_API vg_code vg_graph_def_op_types(const void *bytes, size_t len, vg_import_format format, char ***types,
                                     int **counts, int *n, vg_status *st);
VG_API void vg_import_free_strings(char **strs, int n);
/* Protobuf text format to binary for message "GraphDef", "MetaGraphDef" or
 * "SavedModel", with the fields vigil reads (others are skipped, as unknown binary
 * fields are). *bytes: free with vg_free. Fails with DATA_LOSS (syntax, naming the
 * line), INVALID_ARGUMENT (unknown message, NULL), RESOURCE_EXHAUSTED. */
VG_API vg_code vg_proto_text_to_binary(const void *text, size_t len, const char *message, void **bytes,
                                       size_t *out_len, vg_status *st);

/* ------------------------------------------------------------------------ */
/* MetaGraphDef (tf.train.import_meta_graph) and SavedModel graphs */

typedef struct vg_meta_graph vg_meta_graph;

typedef struct vg_meta_import_options {
    const char *import_scope; /* prefix for every name (NULL: none) */
    bool clear_devices;
    /* Do not import the nodes under the SaverDef's name scope ("save/..."), e.g. to
     * make a vigil Saver over the restored variables instead (vigil/saver.h; it reads
     * the same checkpoints). With it off, TF's own save/restore subgraphs (sharded ones
     * too: StringJoin, ShardedFilename, MergeV2Checkpoints) are imported and run: feed
     * the prefix to filename_tensor_name, fetch save_tensor_name or run
     * restore_op_name. saver_def stays readable either way. */
    bool omit_saver;
    const char *source;       /* named in errors; the *_file functions set the path */
    int64_t max_tensor_bytes; /* as vg_import_options */
} vg_meta_import_options;

/* Imports a serialized MetaGraphDef (binary, or text when printable) into g, as TF's
 * import_meta_graph: the graph_def (vg_graph_import_graph_def rules), then the
 * collections: node_list items become collection items ("x:0" an output, "x" an op as
 * {op, 0}); VariableDef bytes_lists (variables, trainable_variables, local_variables,
 * model_variables, global_step, ...) add the variable ops and link their initializer
 * and snapshot (vg_variable_initializer / vg_variable_snapshot); queue_runners'
 * QueueRunnerDefs become vg_graph_add_queue_runner entries; int64/float lists and other
 * bytes_lists (savers, cond contexts) are not collections vigil can hold and are
 * skipped. *out (may be NULL) gets the SaverDef, tags and SignatureDefs (free with
 * vg_meta_graph_free). Fails as vg_graph_import_graph_def, plus INVALID_ARGUMENT for a
 * collection or signature naming a tensor not in the graph. */
VG_API vg_code vg_import_meta_graph(vg_graph *g, const void *bytes, size_t len, const vg_meta_import_options *opts,
                                    vg_meta_graph **out, vg_status *st);
VG_API vg_code vg_import_meta_graph_file(vg_graph *g, const char *path, const vg_meta_import_options *opts,
                                         vg_meta_graph **out, vg_status *st);
/* Imports the MetaGraphDef of a SavedModel file (saved_model.pb, or .pbtxt) whose tag
 * set equals tags (order ignored), as loader.load does to find it; ntags == 0 takes the
 * first MetaGraphDef. Fails with NOT_FOUND
 * listing the tag sets present when none matches, plus the codes above. */
VG_API vg_code vg_import_saved_model_graph(vg_graph *g, const char *saved_model_pb, const char *const *tags, int ntags,
                                           const vg_meta_import_options *opts, vg_meta_graph **out, vg_status *st);
VG_API void vg_meta_graph_free(vg_meta_graph *mg);
/* The serialized GraphDef inside a binary MetaGraphDef (saved_model false) or binary
 * SavedModel (true: the MetaGraphDef whose tag set equals tags; ntags == 0 takes the
 * first), without importing: *graph_def points into bytes. Fails with DATA_LOSS,
 * NOT_FOUND (no such tag set / no meta graph), INVALID_ARGUMENT (NULL graph_def or
 * graph_def_len, NULL bytes with len > 0). */
VG_API vg_code vg_meta_graph_def_graph_def(const void *bytes, size_t len, bool saved_model, const char *const *tags,
                                           int ntags, const void **graph_def, size_t *graph_def_len, vg_status *st);

/* Accessors below never fail; strings and structs they return are borrowed from mg
 * (valid until vg_meta_graph_free); outputs belong to the graph imported into.
 * The SaverDef (tensor and op names as in the graph, import_scope applied), or NULL. */
VG_API const vg_saver_def *vg_meta_graph_saver_def(const vg_meta_graph *mg);
VG_API int vg_meta_graph_num_tags(const vg_meta_graph *mg);
VG_API const char *vg_meta_graph_tag(const vg_meta_graph *mg, int i);
VG_API const char *vg_meta_graph_tensorflow_version(const vg_meta_graph *mg); /* "" if unset */
/* SignatureDefs: key ("serving_default"), method name, and inputs / outputs by key. */
VG_API int vg_meta_graph_num_signatures(const vg_meta_graph *mg);
VG_API const char *vg_meta_graph_signature_key(const vg_meta_graph *mg, int i);
VG_API const char *vg_meta_graph_signature_method(const vg_meta_graph *mg, int i);
/* Number of inputs (outputs == false) or outputs of signature i; their keys and
 * tensors (an output of the imported graph). */
VG_API int vg_meta_graph_signature_num_tensors(const vg_meta_graph *mg, int i, bool outputs);
VG_API const char *vg_meta_graph_signature_tensor_key(const vg_meta_graph *mg, int i, bool outputs, int j);
VG_API vg_output vg_meta_graph_signature_tensor(const vg_meta_graph *mg, int i, bool outputs, int j);
/* Signature index by key, -1 if absent. */
VG_API int vg_meta_graph_find_signature(const vg_meta_graph *mg, const char *key);
/* SavedModel assets, as loader_impl.get_asset_tensors reads them: the MetaGraphDef's
 * asset_file_def entries, or when there are none the AssetFileDefs of the
 * "saved_model_assets" collection (older exports). Asset i is a file name inside
 * <export_dir>/assets/ and the string tensor (usually a Const in the
 * "asset_filepaths" collection) that the loader feeds with its full path when it runs
 * the main op. Out of range: NULL / {NULL, 0}. */
VG_API int vg_meta_graph_num_assets(const vg_meta_graph *mg);
VG_API const char *vg_meta_graph_asset_filename(const vg_meta_graph *mg, int i);
VG_API vg_output vg_meta_graph_asset_tensor(const vg_meta_graph *mg, int i);

#ifdef __cplusplus
}
#endif
#endif
