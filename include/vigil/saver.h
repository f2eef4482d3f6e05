/*
 * vigil/saver.h - tf.train.Saver and checkpoint management, writing TensorFlow V2
 * checkpoints (model.ckpt-N.index / .data-00000-of-00001 / .meta and the `checkpoint`
 * state file) that TensorFlow reads, and reading TensorFlow's.
 *
 *     vg_saver *saver = vg_saver_new(g, NULL, NULL);           // all global variables
 *     char path[4096];
 *     vg_saver_save(saver, sess, "runs/m/model.ckpt", step, path, sizeof path, &st);
 *     ...
 *     const char *last = vg_latest_checkpoint("runs/m", buf, sizeof buf);
 *     if (last) vg_saver_restore(saver, sess, last, &st);
 *
 * Files of checkpoint P (byte layouts in docs/formats.md §2):
 *   P.index                  SSTable: key "" -> BundleHeaderProto {num_shards: 1,
 *                            version {producer: 1}}; key <variable name> ->
 *                            BundleEntryProto {dtype, shape, offset, size, masked crc32c}
 *   P.data-00000-of-00001    the tensors' bytes back to back, in name order, little-endian
 *                            (strings: varint lengths, masked CRC of the lengths, bytes)
 *   P.meta                   binary MetaGraphDef (vigil/graphdef.h)
 *   <dir>/checkpoint         text CheckpointState: model_checkpoint_path: "..." then one
 *                            all_model_checkpoint_paths: "..." line per kept checkpoint
 *
 * The saver adds TF's ops to the graph when it is created ("save/Const",
 * "save/SaveV2", "save/control_dependency", "save/RestoreV2", "save/Assign*",
 * "save/restore_all"), so create it before the graph is finalized.
 *
 * Crash safety: the .meta, then data and index are written under temporary names,
 * fsync'ed and renamed; the `checkpoint` file is replaced atomically last. A kill
 * at any instant leaves the previous checkpoint restorable and `checkpoint` pointing at
 * a complete one.
 *
 * Paths follow TF1: save(prefix "runs/m/model.ckpt", step 7) writes the checkpoint
 * "runs/m/model.ckpt-7" and "runs/m/checkpoint"; when the directory part of the prefix
 * is relative the state file holds paths relative to it ("model.ckpt-7"), when it is
 * absolute it holds absolute paths. vg_latest_checkpoint joins relative entries with
 * the directory it is given.
 *
 * A saver is not thread-safe (one thread saves/restores at a time); the sessions it
 * runs may be used by other threads meanwhile.
 */
#ifndef VIGIL_SAVER_H
#define VIGIL_SAVER_H

#include "session.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vg_saver vg_saver;

typedef struct vg_saver_options {
    const vg_output *var_list;  /* variables (ref outputs, or resource variables' handles) to save; NULL = all
                                   global variables */
    int nvars;
    int max_to_keep;            /* 0: TF's 5; < 0 as keep_all_checkpoints */
    double keep_checkpoint_every_n_hours; /* 0: TF's 10000. As TF, a checkpoint leaving the
                                   max_to_keep window stays on disk (out of the list) if it
                                   was written after the keep deadline (creation + N h,
                                   moved by N h each time one is kept) */
    bool no_meta_graph;         /* false (TF's write_meta_graph=True): write <prefix>.meta;
                                   true: not */
    bool sharded;               /* accepted for parity; vigil always writes one shard (and
                                   its SaverDef says sharded: false) */
    const char *name;           /* name scope of the saver's ops; NULL: "save" */
    bool allow_empty;           /* false. true: no variables makes an empty saver (TF's
                                   allow_empty): its only op is a NoOp "<name>/restore_all",
                                   save writes no checkpoint and no state file (path_out "")
                                   but, as TF, the .meta (without a SaverDef) when
                                   write_meta_graph, creating its directory; restore does
                                   nothing */
    const char *const *var_names; /* NULL: var_list is a list (keys are the op names). Else
                                   the {name: variable} form: var_names[i] is the checkpoint
                                   key of var_list[i] (e.g. a vg_name_map from
                                   vg_ema_variables_to_restore: var_list = map.vars,
                                   var_names = map.names). Duplicate keys, or one variable
                                   under two keys, fail with INVALID_ARGUMENT. */
    bool keep_all_checkpoints;  /* true: TF's max_to_keep=None or 0, every checkpoint stays
                                   (the state file then lists only the newest) */
} vg_saver_options;

/* Creates the saver and its ops in g. Ownership: free with vg_saver_free (the ops stay
 * in the graph). Fails with the graph's error, INVALID_ARGUMENT (no variables without
 * allow_empty ... TF raises "No variables to save"), RESOURCE_EXHAUSTED. */
VG_API vg_saver *vg_saver_new(vg_graph *g, const vg_saver_options *opts, vg_status *st);
VG_API void vg_saver_free(vg_saver *s);

/* Saves to "<prefix>-<global_step>" (global_step < 0: "<prefix>"), writes the .meta,
 * updates "<dir>/checkpoint" and deletes checkpoints beyond max_to_keep. The path saved
 * is written to path_out (may be NULL). Fails with INVALID_ARGUMENT (TF's ValueError:
 * "Parent directory of <prefix> doesn't exist, can't save."; a prefix named "checkpoint"
 * without a step; path_len too small, after saving), RESOURCE_EXHAUSTED (disk full),
 * PERMISSION_DENIED, FAILED_PRECONDITION (uninitialized variable), with the path in the
 * message. On failure the state file is unchanged; a save that fails while writing the
 * checkpoint leaves none of its files behind. */
VG_API vg_code vg_saver_save(vg_saver *s, vg_session *sess, const char *prefix, int64_t global_step,
                             char *path_out, size_t path_len, vg_status *st);
/* Restores every variable of the saver from the checkpoint at prefix (the variables
 * need not be initialized). The index is checked against the variables first (every
 * key present, same dtype and shape), then restore_all runs. Fails with INVALID_ARGUMENT
 * (TF's ValueError: "The passed save_path is not a valid checkpoint: <prefix>" when no
 * checkpoint has that prefix, "Can't load save_path when it is None." for NULL; a dtype
 * or shape mismatch, naming the tensor), NOT_FOUND ("Key w not found in checkpoint"), DATA_LOSS
 * (CRC mismatch, truncation, corrupt index). On failure no variable is changed. */
VG_API vg_code vg_saver_restore(vg_saver *s, vg_session *sess, const char *prefix, vg_status *st);
/* Checkpoints this saver still manages (oldest first), borrowed until the next save. */
VG_API int vg_saver_num_last_checkpoints(const vg_saver *s);
VG_API const char *vg_saver_last_checkpoint(const vg_saver *s, int i);
/* recover_last_checkpoints: adopt existing checkpoint paths (e.g. after a restart) so
 * max_to_keep keeps deleting them. Paths whose files are gone are skipped; each one's
 * time is its file's mtime. Replaces the current list.
 * vigil addition (crash clean-up): when the newest path is "<dir>/<base>-N", it first
 * deletes from dir the stale temporaries of an interrupted save ("<base>-*.tempstate<16
 * hex>", "checkpoint.tempstate<16 hex>", "graph.pbtxt.tempstate<16 hex>") and, when max_to_keep > 0 and
 * keep_checkpoint_every_n_hours is not in use, the files of checkpoints "<base>-M" with
 * M < N that paths does not name (what max_to_keep would have deleted), logging a
 * WARNING with the counts. */
VG_API void vg_saver_recover_last_checkpoints(vg_saver *s, const char *const *paths, int n);
/* vg_saver_recover_last_checkpoints for paths read from the checkpoint state file of
 * dir (the directory the saver writes to; NULL: as vg_saver_recover_last_checkpoints).
 * The crash clean-up runs only when the newest path lies in dir (compared by device and
 * inode, so "../x", absolute paths elsewhere and symlinked directories do not match);
 * otherwise a WARNING names it and nothing is deleted. Whichever function adopted them,
 * adopted paths are deleted by max_to_keep only when they lie in the directory of the
 * save that prunes them and are named "<basename of its prefix>[-<step>]"; any other is
 * kept in the list (and the state file) but its files are left in place, with a WARNING
 * naming it. Symlinks there are removed, never followed. Copies dir. */
VG_API void vg_saver_recover_last_checkpoints_in(vg_saver *s, const char *dir, const char *const *paths, int n);
/* The saver's ops (for Scaffold / MetaGraphDef's SaverDef). */
VG_API vg_output vg_saver_filename_tensor(const vg_saver *s);   /* "save/Const:0" */
VG_API vg_output vg_saver_save_tensor(const vg_saver *s);       /* "save/control_dependency:0" */
VG_API vg_op *vg_saver_restore_op(const vg_saver *s);           /* "save/restore_all" */

/* tf.train.init_from_checkpoint(ckpt_dir_or_file, assignment_map): n pairs
 * ckpt_names[i] -> current_names[i]. A pair of variable names makes the current
 * variable's initializer load that checkpoint tensor (TF replaces the initializer:
 * "<var>/Assign" is swapped for an Assign from a RestoreV2 named
 * "checkpoint_initializer"); a pair of scopes ending in "/" ("old/": "new/", or "/" for
 * the root) maps every global variable under the current scope to the checkpoint
 * tensor of the same suffix under the checkpoint scope. Call it before building the
 * init op (vg_global_variables_initializer), as in TF. A directory takes its latest
 * checkpoint. Fails with NOT_FOUND (no checkpoint), INVALID_ARGUMENT ("Tensor x is not
 * found in <ckpt> checkpoint", "Shape of variable v ([2,3]) doesn't match with shape of
 * tensor x ([3]) from checkpoint reader.", a scope mapped to a name, an unknown current
 * variable), DATA_LOSS, RESOURCE_EXHAUSTED; the graph is unchanged on an error found
 * before building ops. */
VG_API vg_code vg_init_from_checkpoint(vg_graph *g, const char *ckpt_dir_or_file, const char *const *ckpt_names,
                                       const char *const *current_names, int n, vg_status *st);

/* ------------------------------------------------------------------------ */
/* Checkpoint management (checkpoint_management.py). */

typedef struct vg_checkpoint_state {
    char *model_checkpoint_path;
    char **all_model_checkpoint_paths;
    int n_all;
} vg_checkpoint_state;

/* tf.train.latest_checkpoint(dir): the newest checkpoint prefix whose files exist, or
 * NULL (also when `checkpoint` is missing or unreadable, or the path does not fit in
 * len bytes; a missing checkpoint is logged). Writes into buf. Relative paths in the
 * state file are taken relative to dir, as TF does. */
VG_API const char *vg_latest_checkpoint(const char *dir, char *buf, size_t len);
/* The checkpoint a restarting trainer must resume from (vigil's, stricter than
 * latest_checkpoint: never a silent start from step 0 over an existing run). Writes the
 * prefix into buf (len bytes) and returns VG_OK when one is found:
 *   - the state file's model_checkpoint_path when that checkpoint is complete (index
 *     parses, every tensor's bytes lie in existing data files);
 *   - else the newest complete one its list names, else the newest complete one found
 *     by listing dir (by "-N" step suffix, then .index mtime); these log a WARNING.
 * Fails with NOT_FOUND only when there is no state file and no "*.index" file in dir
 * (a fresh start is safe); DATA_LOSS naming the file when "<dir>/checkpoint" exists
 * but cannot be read or parsed (unreadable, special file, dangling link, syntax) or
 * names nothing complete while none is found by listing, and when .index files exist
 * but none is complete; INVALID_ARGUMENT (NULL arguments, path longer than len);
 * RESOURCE_EXHAUSTED. */
VG_API vg_code vg_checkpoint_find_latest(const char *dir, char *buf, size_t len, vg_status *st);
/* tf.train.get_checkpoint_state(dir): reads "<dir>/checkpoint" into a new state (free
 * with vg_checkpoint_state_free); relative paths are joined with dir. Fails with
 * NOT_FOUND (no state file; TF returns None), DATA_LOSS (unparsable; TF logs and returns
 * None), INVALID_ARGUMENT "Invalid checkpoint state loaded from <dir>" (parsed, but no
 * or an empty model_checkpoint_path: TF's ValueError), FAILED_PRECONDITION (not a
 * regular file). */
VG_API vg_code vg_get_checkpoint_state(const char *dir, vg_checkpoint_state **out, vg_status *st);
VG_API void vg_checkpoint_state_free(vg_checkpoint_state *cs);
/* True if the files of a V2 checkpoint with this prefix exist (".index"), or a V1
 * checkpoint file named prefix (checkpoint_exists). */
VG_API bool vg_checkpoint_exists(const char *prefix);

/* ------------------------------------------------------------------------ */
/* Reading checkpoints directly (inspect_checkpoint). */

typedef struct vg_checkpoint_reader vg_checkpoint_reader;
/* Opens "<prefix>.index". Fails with NOT_FOUND (TF's "Unsuccessful TensorSliceReader
 * constructor: Failed to find any matching files for <prefix>" when no checkpoint has
 * that prefix), DATA_LOSS. */
VG_API vg_checkpoint_reader *vg_checkpoint_reader_new(const char *prefix, vg_status *st);
VG_API void vg_checkpoint_reader_free(vg_checkpoint_reader *r);
VG_API int vg_checkpoint_reader_num_tensors(const vg_checkpoint_reader *r);
/* Tensor i in name order: name (borrowed until the reader is freed; NULL when i is out
 * of range), dtype (TF's DataType number, also for types vigil has no tensors for, e.g.
 * 19 = half), shape (unknown rank above VG_MAX_DIMS). dt and shape may be NULL. */
VG_API const char *vg_checkpoint_reader_tensor(const vg_checkpoint_reader *r, int i, vg_dtype *dt, vg_shape *shape);
/* Reads a tensor into a new tensor (the caller frees it). Fails with NOT_FOUND, DATA_LOSS,
 * UNIMPLEMENTED (dtypes vigil has no tensor type for, rank > VG_MAX_DIMS, partitioned
 * tensors). */
VG_API vg_tensor *vg_checkpoint_reader_read(vg_checkpoint_reader *r, const char *name, vg_status *st);

#ifdef __cplusplus
}
#endif
#endif
