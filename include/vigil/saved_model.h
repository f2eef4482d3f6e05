/*
 * vigil/saved_model.h - loading a TensorFlow SavedModel (tf.saved_model.loader.load of
 * TF 1.15): the MetaGraphDef matching a tag set is imported (vigil/import.h), its
 * variables are restored from <export_dir>/variables/variables, its main op (collection
 * "saved_model_main_op", else "legacy_init_op") runs with every asset tensor fed
 * "<export_dir>/assets/<filename>" (vg_meta_graph_num_assets), and its SignatureDefs
 * run by key.
 *
 *     vg_saved_model *m;
 *     if (vg_saved_model_load("half_plus_two/00000123", (const char *[]){"serve"}, 1, NULL, &m, &st))
 *         return st.code;
 *     vg_tensor *xin = vg_tensor_new_scalar_f32(2.0f, &st), *yout = NULL;  // y = 0.5 * 2 + 2
 *     vg_saved_model_run(m, "serving_default", (const char *[]){"x"}, &xin, 1,
 *                        (const char *[]){"y"}, &yout, 1, &st);
 *     vg_saved_model_free(m);
 *
 * The SavedModel's own saver ops are not imported; a vigil Saver named "vigil_restore"
 * over the "variables" collection reads the same V2 checkpoint (to run TF's own
 * sharded save/restore subgraph, import with vg_import_saved_model_graph and
 * omit_saver off). Graphs with op types vigil lacks fail with UNIMPLEMENTED listing
 * them all.
 *
 * Untrusted models: loading runs the model's main op and vg_saved_model_run runs what
 * a signature fetches, so a model can write files (SaveV2 with any prefix, CacheDataset
 * with a file name), and rename or delete them (MergeV2Checkpoints) anywhere the process
 * may, as tf.saved_model.loader.load does. Load a model you did not make with
 * vg_saved_model_load_ex and refuse_file_writes set: the load then fails before
 * anything runs when the graph holds such an op.
 */
#ifndef VIGIL_SAVED_MODEL_H
#define VIGIL_SAVED_MODEL_H

#include "import.h"
#include "saver.h"
#include "session.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vg_saved_model {
    vg_graph *graph;           /* owned by the model */
    vg_session *session;       /* owned by the model */
    vg_meta_graph *meta_graph; /* signatures, tags, SaverDef */
} vg_saved_model;

/* Loads export_dir (saved_model.pb, else saved_model.pbtxt). session_options may be
 * NULL. *out: free with vg_saved_model_free. Fails with NOT_FOUND (no saved_model.pb,
 * no MetaGraphDef with these tags, checkpoint key missing), UNIMPLEMENTED (op types),
 * DATA_LOSS (corrupt files, naming them), INVALID_ARGUMENT (also for a NULL export_dir
 * or out), RESOURCE_EXHAUSTED. */
VG_API vg_code vg_saved_model_load(const char *export_dir, const char *const *tags, int ntags,
                                   const vg_session_options *session_options, vg_saved_model **out, vg_status *st);
VG_API void vg_saved_model_free(vg_saved_model *m);

typedef struct vg_saved_model_load_options {
    const vg_session_options *session_options; /* NULL: defaults */
    /* true: fail with PERMISSION_DENIED, naming the op and its type, when the imported
     * graph (main op, signatures, anything in it; the model's own saver subgraph is not
     * imported) has an op that can create, write, rename or delete files: SaveV2, Save,
     * SaveSlices, MergeV2Checkpoints, WriteFile, the summary-writer ops (
     * CreateSummaryFileWriter, Write*Summary, ...), DatasetToTFRecord, SnapshotDataset,
     * PrintV2, the Debug* ops, and CacheDataset unless its filename is a constant "". */
    bool refuse_file_writes;
    /* the main op's run (NULL: none; its timeout_in_ms bounds a main op that never ends,
     * DEADLINE_EXCEEDED) */
    const vg_run_options *main_op_run_options;
} vg_saved_model_load_options;

/* vg_saved_model_load with options (NULL: (vg_saved_model_load_options){0}). Fails with
 * vg_saved_model_load's codes, PERMISSION_DENIED (refuse_file_writes), INVALID_ARGUMENT
 * (NULL out).
 *
 *     vg_saved_model_load_options lo = {0};
 *     lo.refuse_file_writes = true;  // a model downloaded from somewhere
 *     vg_saved_model *m;
 *     if (vg_saved_model_load_ex("half_plus_two/00000123", (const char *[]){"serve"}, 1, &lo, &m, &st))
 *         return st.code;
 *     vg_saved_model_free(m);
 */
VG_API vg_code vg_saved_model_load_ex(const char *export_dir, const char *const *tags, int ntags,
                                      const vg_saved_model_load_options *options, vg_saved_model **out,
                                      vg_status *st);

/* Runs signature `key`: feeds inputs by their signature keys, fetches outputs by
 * theirs (outputs[i] new references, the caller frees). Fails with NOT_FOUND (unknown
 * signature or tensor key, naming it), INVALID_ARGUMENT (NULL m, NULL key or value
 * arrays with a count > 0) and the session's codes. */
VG_API vg_code vg_saved_model_run(vg_saved_model *m, const char *key, const char *const *input_keys,
                                  vg_tensor *const *inputs, int ninputs, const char *const *output_keys,
                                  vg_tensor **outputs, int noutputs, vg_status *st);

/* vg_saved_model_run under run_options (NULL: none): e.g. timeout_in_ms, after which the
 * run fails with DEADLINE_EXCEEDED (a while_loop that never exits included). */
VG_API vg_code vg_saved_model_run_ex(vg_saved_model *m, const vg_run_options *run_options, const char *key,
                                     const char *const *input_keys, vg_tensor *const *inputs, int ninputs,
                                     const char *const *output_keys, vg_tensor **outputs, int noutputs,
                                     vg_status *st);

/* ------------------------------------------------------------------------ */
/* Writing (tf.saved_model.builder.SavedModelBuilder, one MetaGraphDef) */

typedef struct vg_signature_tensor {
    const char *key;  /* "x" */
    vg_output tensor; /* written as TensorInfo {name "op:i", dtype, tensor_shape} */
} vg_signature_tensor;

typedef struct vg_signature_def {
    const char *key;         /* "serving_default" */
    const char *method_name; /* "tensorflow/serving/predict" (NULL: that) */
    const vg_signature_tensor *inputs;
    int ninputs;
    const vg_signature_tensor *outputs;
    int noutputs;
} vg_signature_def;

/* Writes a SavedModel of g to export_dir (which must not exist): saver's variables from
 * sess into variables/variables.{index,data-00000-of-00001} (saver: a vigil/saver.h
 * Saver made before the session, as its ops must exist when the session is created;
 * NULL when the graph has no variables), and saved_model.pb
 * = SavedModel {saved_model_schema_version 1, meta_graphs [MetaGraphDef with
 * meta_info_def.tags, the graph, the SaverDef, the collections, signature_def]}.
 * main_op (may be NULL) goes into the "saved_model_main_op" collection (if empty).
 * Assets: every item of g's "asset_filepaths" collection (string Consts naming source
 * files, tf.GraphKeys.ASSET_FILEPATHS) gets an asset_file_def {tensor, filename =
 * basename; a second source with a taken basename becomes "name_1.ext"} and its file is
 * copied to export_dir/assets/; the loader feeds the tensors with those paths when it
 * runs the main op (vg_saved_model_load). A collection item that is not such a Const is
 * INVALID_ARGUMENT; a source file that cannot be read NOT_FOUND.
 * Fails with ALREADY_EXISTS (export_dir exists), INVALID_ARGUMENT (NULL or foreign
 * tensors), the Saver's codes, RESOURCE_EXHAUSTED and I/O codes. */
VG_API vg_code vg_saved_model_save(vg_graph *g, vg_session *sess, vg_saver *saver, const char *export_dir,
                                   const char *const *tags, int ntags, const vg_signature_def *sigs, int nsigs,
                                   vg_op *main_op, vg_status *st);

/* Copies files into export_dir/assets.extra/ (by basename): the directory TF Serving
 * reads for files the graph does not use (tf_serving_warmup_requests, ...); the loader
 * ignores it. Fails with NOT_FOUND (export_dir or a file missing), INVALID_ARGUMENT,
 * PERMISSION_DENIED and I/O codes. */
VG_API vg_code vg_saved_model_add_assets_extra(const char *export_dir, const char *const *files, int nfiles,
                                               vg_status *st);

#ifdef __cplusplus
}
#endif
#endif
