/*
 * vigil/graphdef.h - GraphDef and MetaGraphDef export in TensorFlow's formats
 * (binary protobuf and text format), for .meta files, graph.pbtxt and TensorBoard.
 *
 * Nodes are written in creation order with TF's op types, inputs ("name", "name:1",
 * "^ctrl"), device and attrs (T, dtype, shape, value, ...; sorted by name, as TF's
 * deterministic serialization); versions {producer: 27} (TF 1.15's GraphDef version is
 * 134; vigil writes the producer it is compatible with, see graphdef.c). Const values
 * follow TF's make_tensor_proto (typed field for one element, tensor_content for more;
 * an all-equal tensor is written as one value with its full shape).
 *
 *     void *pb; size_t n;
 *     if (vg_graph_to_graphdef(g, &pb, &n, &st) == VG_OK) {
 *         vg_write_file_atomic("graph.pb", pb, n, &st);
 *         vg_free(pb);
 *     }
 */
#ifndef VIGIL_GRAPHDEF_H
#define VIGIL_GRAPHDEF_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Serialized GraphDef of every op in g. *bytes is allocated with the vigil allocator
 * (free with vg_free). Fails with RESOURCE_EXHAUSTED. */
VG_API vg_code vg_graph_to_graphdef(const vg_graph *g, void **bytes, size_t *len, vg_status *st);
/* GraphDef in protobuf text format (graph.pbtxt), NUL-terminated (free with vg_free). */
VG_API vg_code vg_graph_to_graphdef_text(const vg_graph *g, char **text, size_t *len, vg_status *st);

/* SaverDef fields for a MetaGraphDef (from vigil/saver.h's accessors). */
typedef struct vg_saver_def {
    const char *filename_tensor_name;   /* "save/Const:0" */
    const char *save_tensor_name;       /* "save/control_dependency:0" */
    const char *restore_op_name;        /* "save/restore_all" */
    int max_to_keep;
    bool sharded;
    float keep_checkpoint_every_n_hours;
} vg_saver_def;

/* Serialized MetaGraphDef: meta_info_def (tags none, tensorflow_version "1.15.0" for
 * compatibility, any_info none, no stripped_op_list), graph_def (with "_output_shapes"
 * on every node, as TF's export_meta_graph), saver_def (may be NULL), collection_def in
 * key order, empty collections skipped, as TF writes them: VariableDefs (bytes_list) for
 * variables / trainable_variables / local_variables / model_variables / global_step,
 * QueueRunnerDefs for queue_runners, SaverDefs for savers, op names (node_list) for
 * train_op / init_op / local_init_op / update_ops and for ops without outputs, tensor
 * names ("loss:0") otherwise. Free with vg_free. Fails with RESOURCE_EXHAUSTED. */
VG_API vg_code vg_graph_to_meta_graph(const vg_graph *g, const vg_saver_def *saver_def, void **bytes, size_t *len,
                                      vg_status *st);
/* Writes a file atomically (temp name, fsync, rename). Fails with the OS error mapped
 * to a code (NOT_FOUND, PERMISSION_DENIED, RESOURCE_EXHAUSTED for a full disk). */
VG_API vg_code vg_write_file_atomic(const char *path, const void *bytes, size_t len, vg_status *st);
/* Reads a whole regular file into *bytes (new, free with vg_free; NUL-terminated one past
 * *len). Never blocks on a FIFO and never reads a device: FAILED_PRECONDITION "<path> is
 * not a regular file (a FIFO)" for FIFOs, devices (/dev/zero), directories and sockets.
 * Fails with INVALID_ARGUMENT (NULL or empty path), NOT_FOUND naming the file,
 * PERMISSION_DENIED, RESOURCE_EXHAUSTED. */
VG_API vg_code vg_read_file(const char *path, void **bytes, size_t *len, vg_status *st);

#ifdef __cplusplus
}
#endif
#endif
