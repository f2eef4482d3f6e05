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
 *     if (vg_graph_import_graph_def_file(g, "model.pb", &o, &st) != VG_OK) ...;
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

#include "graph.h"

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
 * vg_import_free_strings. Fails with DATA_LOSS, INVALID_ARGUMENT (text syntax),
 * RESOURCE_EXHAUSTED. */
VG_API vg_code vg_graph_def_missing_ops(const void *bytes, size_t len, vg_import_format format, char ***types,
                                        int **counts, int *n, vg_status *st);
VG_API void vg_import_free_strings(char **strs, int n);

#ifdef __cplusplus
}
#endif
#endif
