/*
 * vigil/data.h - tf.data: datasets as graph values and iterators as session resources.
 *
 *     #include <vigil/vigil.h>
 *     static vg_code parse_fn(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts,
 *                             void *payload) {
 *         (void)nargs; (void)payload;
 *         outs[0] = vg_identity(fg, args[0], NULL);    // a real parser: vg_parse_single_example
 *         *nouts = 1;
 *         return VG_OK;
 *     }
 *     vg_op *build_input(vg_graph *g, vg_output files) {
 *         vg_output ds = vg_dataset_tfrecord(g, files, "GZIP", NULL);
 *         ds = vg_dataset_map(g, ds, parse_fn, NULL, NULL);
 *         ds = vg_dataset_shuffle(g, ds, 1000, 42, true, NULL);
 *         ds = vg_dataset_batch(g, ds, 32, true, NULL);
 *         ds = vg_dataset_repeat(g, ds, 2, NULL);
 *         ds = vg_dataset_prefetch(g, ds, 1, NULL);
 *         vg_output it = vg_make_one_shot_iterator(g, ds, NULL);
 *         return vg_iterator_get_next(g, it, NULL);   // outputs: the components
 *     }
 *
 * Run vg_out(next, i) until the run fails with OUT_OF_RANGE ("End of sequence"), the
 * end-of-input signal a MonitoredSession treats as a clean stop.
 *
 * A dataset value (a dataset op's output, dtype VG_RESOURCE) is an immutable
 * description; an iterator (IteratorV2 / OneShotIterator, one per session) holds the
 * position. Every dataset op carries TF's attrs output_types and output_shapes, and
 * vg_dataset_* builders fail (the graph's sticky error, INVALID_ARGUMENT) on inputs
 * that are not datasets or have the wrong types. Elements have at most 16 components.
 *
 * A function (map, filter, flat_map, interleave, reduce) is a separate vg_graph built
 * once by a C callback; it reaches values of the outer graph (a placeholder, a
 * constant, a lookup table, a resource variable, an iterator) through
 * vg_dataset_capture, as TF's function captures them.
 *
 * Deviations from TF 1.15: captures are explicit (vg_dataset_capture) where TF captures
 * any outer tensor a function uses; OneShotIterator takes the dataset as an input and
 * initializes itself on its first run in a session (TF builds it from a function).
 */
#ifndef VIGIL_DATA_H
#define VIGIL_DATA_H
#include "graph.h"
#ifdef __cplusplus
extern "C" {
#endif

#define VG_DATASET_MAX_COMPONENTS 16
/* The most values one tf.data function may capture (vg_dataset_capture). */
#define VG_DATASET_MAX_CAPTURES 32

/* ---- decode limits ---------------------------------------------------------------
 * Bounds that keep a small hostile input from growing large in memory (a decompression
 * bomb), process-wide, for every session:
 *   max_image_pixels     DecodePng / DecodeJpeg / DecodeImage (and the fuzzed decoders):
 *                        width x height of the stored image (a JPEG decoded with
 *                        ratio > 1 counts its full size: libjpeg buffers that much for a
 *                        progressive file). Default 2^28 (268 M pixels, 16384 x 16384).
 *   max_png_chunk_bytes  the longest PNG chunk before the first IDAT (tEXt, zTXt, iCCP,
 *                        unknown chunks: libpng allocates what the header claims) and
 *                        what compressed ones may inflate to (png_set_chunk_malloc_max).
 *                        Default 8 MiB (libpng's own).
 *   max_record_bytes     one TFRecord record (plain, ZLIB, GZIP) from TFRecordDataset,
 *                        TFRecordReader and `vigil train --input`, and one line of a
 *                        TextLineDataset / TextLineReader. Default 1 GiB.
 * Exceeding a limit fails the op with RESOURCE_EXHAUSTED, naming the file (records)
 * or the op (images), the size and the limit. Independently of the limits, headers
 * that claim more than the input can hold are refused before allocating (DATA_LOSS
 * for records, INVALID_ARGUMENT for images): a compressed record cannot be more than
 * ~1032x what is left of its file, a progressive Huffman JPEG spends at least one bit
 * on each 8x8 block.
 *
 *     vg_decode_limits l = vg_get_decode_limits();
 *     l.max_image_pixels = (int64_t)1 << 30;    // allow 32768 x 32768 images
 *     vg_set_decode_limits(&l, &st);      // applies to the decodes that start afterwards
 */
#define VG_DEFAULT_MAX_IMAGE_PIXELS ((int64_t)1 << 28)
#define VG_DEFAULT_MAX_PNG_CHUNK_BYTES ((int64_t)8 << 20)
#define VG_DEFAULT_MAX_RECORD_BYTES ((int64_t)1 << 30)
typedef struct vg_decode_limits {
    int64_t max_image_pixels;
    int64_t max_png_chunk_bytes;
    int64_t max_record_bytes;
} vg_decode_limits;
/* The defaults above. */
VG_API vg_decode_limits vg_decode_limits_default(void);
/* The limits in force now. */
VG_API vg_decode_limits vg_get_decode_limits(void);
/* Sets all three (a 0 field: its default); applies to decodes that start afterwards,
 * from any thread. limits is borrowed. Fails with INVALID_ARGUMENT (NULL, a negative
 * field), changing nothing. */
VG_API vg_code vg_set_decode_limits(const vg_decode_limits *limits, vg_status *st);

/* Number of components of a dataset's elements and their dtypes/shapes (from its
 * op's attrs); 0 when ds is not a dataset. types/shapes may be NULL. */
VG_API int vg_dataset_components(vg_output ds, vg_dtype *types, vg_shape *shapes);

/* ---- sources ----------------------------------------------------------- */
/* TensorSliceDataset: element i = (components[0][i], ..., components[n-1][i]); all
 * components need the same first dimension (run-time INVALID_ARGUMENT otherwise). */
VG_API vg_output vg_dataset_from_tensor_slices(vg_graph *g, const vg_output *components, int n, const char *name);
/* TensorDataset (from_tensors): one element, the components themselves. */
VG_API vg_output vg_dataset_from_tensors(vg_graph *g, const vg_output *components, int n, const char *name);
/* FixedLengthRecordDatasetV2(filenames, header_bytes, record_bytes, footer_bytes):
 * string records; a file whose body (without header and footer) is not a whole number
 * of records fails with INVALID_ARGUMENT (as TF), a missing one with NOT_FOUND. */
VG_API vg_output vg_dataset_fixed_length_record(vg_graph *g, vg_output filenames, int64_t header_bytes,
                                                int64_t record_bytes, int64_t footer_bytes, const char *name);
/* RangeDataset(start, stop, step): int64 scalars; step 0 is INVALID_ARGUMENT. */
VG_API vg_output vg_dataset_range(vg_graph *g, int64_t start, int64_t stop, int64_t step, const char *name);
/* TFRecordDataset(filenames: string scalar or vector, compression_type "", "ZLIB",
 * "GZIP"): elements are string scalars, the records of the files in order. Missing
 * file: NOT_FOUND naming it; corrupt record: DATA_LOSS naming file and offset; after
 * such an error the iterator continues with the next file (as TF). */
VG_API vg_output vg_dataset_tfrecord(vg_graph *g, vg_output filenames, const char *compression_type,
                                     const char *name);

/* TextLineDataset(filenames, compression_type "", "ZLIB" or "GZIP"): the lines of the
 * files ("\n", "\r\n" removed; a last line without newline kept; lines may hold NUL
 * bytes). As in TF, "" reads the bytes as they are (a gzip file is not decompressed);
 * "ZLIB" / "GZIP" inflate one zlib stream / gzip members. Missing file: NOT_FOUND naming
 * it; data that does not inflate or a truncated stream: DATA_LOSS naming the file,
 * after which the iterator continues with the next file (as TF). */
VG_API vg_output vg_dataset_text_line(vg_graph *g, vg_output filenames, const char *compression_type,
                                      const char *name);
/* tf.data.Dataset.list_files(pattern, shuffle, seed): MatchingFiles, an Assert
 * ("No files matched pattern: ..." INVALID_ARGUMENT at run time when nothing matches),
 * from_tensor_slices, and a shuffle over all the names when shuffle. */
VG_API vg_output vg_dataset_list_files(vg_graph *g, const char *pattern, bool shuffle, int64_t seed,
                                       const char *name);

/* ---- transformations ---------------------------------------------------- */
/* The map function: build the outputs from args (placeholders of the input element's
 * components) in fg, write them to outs (at most VG_DATASET_MAX_COMPONENTS) and
 * their count to *nouts; return VG_OK (or an error, which fails the builder). */
typedef vg_code (*vg_dataset_map_fn)(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts,
                                     void *payload);
/* Inside a tf.data function callback: makes `outer` (an output of the graph that owns
 * fg, or of an enclosing function graph: a flat_map's inner map may capture the top
 * graph's values) available in fg and returns fg's output for it, a Placeholder named
 * `name` (NULL: outer's op name) of outer's dtype and shape. As TF's captured inputs,
 * the captured outputs become the dataset op's other_arguments (attr Targuments, after
 * the input dataset; for ReduceDataset after the initial state) and are evaluated when
 * the op makes the dataset, i.e. when the iterator's initializer runs (a one-shot
 * iterator: its first run): a placeholder fed to that run is the value every call of
 * the function sees, until the initializer runs again. Capturing the same output again
 * returns the same placeholder; an output of fg itself is returned as it is.
 *
 * Resource handles pass as they are: a captured lookup table handle (vg_lookup_table's
 * handle; the placeholder keeps the table's key_dtype / value_dtype) looks up the
 * session's table, the one tables_initializer filled; a captured resource variable
 * handle reads or updates the session's variable at each call (read it with
 * vg_read_variable_op(fg, h, dtype, ...): the placeholder carries no VarHandleOp dtype);
 * a captured iterator handle (output_types / output_shapes kept) gets the next element
 * of the session's iterator at each call; a captured dataset is that dataset. A
 * VariableV2 output (a ref variable) is captured by value: the function sees the
 * variable's value when the initializer ran (as TF 1.15, whose functions capture the
 * variable's snapshot); ops that need a variable reference (Assign*) cannot take it
 * (build error "Input 0 of AssignAdd must be a variable reference").
 *
 * Functions with captures run element by element (no vectorized or native fast path).
 * An iterator state (vg_make_saveable_from_iterator) holds the captured values and a
 * restore uses them; a captured resource handle cannot be saved (UNIMPLEMENTED naming
 * the dataset op; a function that uses a table or variable is already refused as
 * stateful, INVALID_ARGUMENT).
 *
 * Errors (fg's sticky status, {NULL, 0} returned): INVALID_ARGUMENT when fg is not a
 * function graph being built on this thread (called outside the callback), when outer
 * is {NULL} or in a graph that neither owns the dataset op nor encloses it;
 * RESOURCE_EXHAUSTED past VG_DATASET_MAX_CAPTURES values per function. Nothing to
 * free: the placeholder belongs to fg. */
VG_API vg_output vg_dataset_capture(vg_graph *fg, vg_output outer, const char *name);
/* MapDataset: fn is called once, now; the function graph belongs to g. Run-time
 * errors of the function fail get_next with the function's message. */
VG_API vg_output vg_dataset_map(vg_graph *g, vg_output ds, vg_dataset_map_fn fn, void *payload, const char *name);
/* InterleaveDataset(cycle_length, block_length): fn maps an element to a dataset (its
 * one output, e.g. vg_dataset_tfrecord(fg, args[0], ...)); cycle_length of them are
 * read in turn, block_length elements at a time, each replaced by the next input
 * element's dataset when it ends (TF's deterministic order). */
VG_API vg_output vg_dataset_interleave(vg_graph *g, vg_output ds, vg_dataset_map_fn fn, void *payload,
                                       int64_t cycle_length, int64_t block_length, const char *name);
/* ParallelInterleaveDatasetV2 (interleave with num_parallel_calls, sloppy = false): the
 * same elements in the same order as vg_dataset_interleave, but every open cycle
 * element is read ahead (two blocks) by its own thread, so cycle_length files are read
 * and decoded concurrently. num_parallel_calls -1 (AUTOTUNE) = cycle_length; <= 0 is a
 * run-time INVALID_ARGUMENT. */
VG_API vg_output vg_dataset_interleave_parallel(vg_graph *g, vg_output ds, vg_dataset_map_fn fn, void *payload,
                                                int64_t cycle_length, int64_t block_length, int num_parallel_calls,
                                                const char *name);
/* FlatMapDataset (Dataset.flat_map): fn maps an element to a dataset (its one output);
 * the datasets' elements follow each other in order (interleave with cycle_length 1). */
VG_API vg_output vg_dataset_flat_map(vg_graph *g, vg_output ds, vg_dataset_map_fn fn, void *payload, const char *name);
/* WindowDataset (Dataset.window(size, shift, stride, drop_remainder), TF 1.15): a
 * dataset of windows. Each element has one VG_RESOURCE component per component of ds:
 * a dataset of that component's values in the window. Window k holds ds's elements
 * k * shift + i * stride for i = 0 .. size - 1; at ds's end the windows come out
 * shorter (every stride-th of what is left) unless drop_remainder. shift < 0 means
 * size (TF's shift=None); stride is 1 for TF's default. A window fails with the error
 * of the first of its elements whose production failed (elements skipped by the
 * stride do not count). Read the windows with vg_dataset_flat_map or
 * vg_dataset_interleave applied directly to this dataset: the function's arguments are
 * then datasets (one per component) that vg_dataset_batch, vg_dataset_zip, ... take,
 * and it returns one dataset. Build error (the graph's sticky status): INVALID_ARGUMENT
 * for an input that is not a dataset; size, shift or stride 0 or less fail when the
 * dataset is made (the iterator's initializer) with INVALID_ARGUMENT "Window size must
 * be greater than zero." (shift, stride: TF's messages). Iterators over windows save
 * and restore (vg_make_saveable_from_iterator) like the others, except windows of
 * windows (UNIMPLEMENTED). */
VG_API vg_output vg_dataset_window(vg_graph *g, vg_output ds, int64_t size, int64_t shift, int64_t stride,
                                   bool drop_remainder, const char *name);
/* tf.contrib.data.group_by_window(key_func, reduce_func, window_size, window_size_func)
 * (GroupByWindowDataset, TF 1.15): groups ds's elements by key and reduces each window
 * of a group to a dataset whose elements are the output's. key_func is built like a map
 * function over ds's components and returns an int64 scalar (the key);
 * window_size_func (args[0]: the key, an int64 scalar) returns an int64 scalar, the
 * window size of that key, asked once per key; window_size_func NULL: every window
 * holds window_size elements (TF's window_size; pass -1 with a window_size_func).
 * reduce_func gets args[0] = the key and args[1] = the window, a dataset of ds's
 * components (VG_RESOURCE; take it with vg_dataset_batch, vg_dataset_padded_batch, ...),
 * and returns one dataset. A group is reduced when it holds its window size; at ds's
 * end the remaining (partial) groups are reduced in increasing key order; each
 * reduced dataset is read to its end before more input is read (TF's order). The one
 * payload is passed to all three callbacks; each may capture values
 * (vg_dataset_capture: the op's key_func_other_arguments, ...).
 * Build errors (the graph's sticky INVALID_ARGUMENT, TF's messages): "`key_func` must
 * return a single tf.int64 tensor.", "`window_size_func` must return a single tf.int64
 * scalar tensor.", "`reduce_func` must return a `Dataset` object.", "Either the
 * `window_size` argument or the `window_size_func` argument must be specified." (both
 * given). Run time (get_next, INVALID_ARGUMENT): "Window size must be greater than zero,
 * but got 0.", "`key_func` must return a scalar int64." (a key of another shape), and
 * the functions' errors. Iterators save and restore (vg_make_saveable_from_iterator):
 * the state holds the three functions, the open groups, the window sizes and the window
 * being read (reduce_func runs again over it at the restore, as in TF). */
VG_API vg_output vg_dataset_group_by_window(vg_graph *g, vg_output ds, vg_dataset_map_fn key_func,
                                            vg_dataset_map_fn reduce_func, int64_t window_size,
                                            vg_dataset_map_fn window_size_func, void *payload, const char *name);
/* ReduceDataset (Dataset.reduce(initial_state, reduce_fn)): runs ds to its end inside
 * one session run and returns the final state: outputs[0..n) (set by the call; owned by
 * the graph) have initial_state's dtypes. reduce_fn is built like a map function over
 * n + (ds's components) arguments, the state's first, and returns n outputs, the new
 * state, of the state's dtypes (else INVALID_ARGUMENT "The element types for the new
 * state must match the initial state. ..." on the graph); where a new state's shape
 * differs from the initial one the function is built again over that component with an
 * unknown shape (as TF retraces it). An empty ds gives initial_state. Returns n, or 0
 * with the graph's sticky error set. At run time an element's error or the function's
 * error fails the run with that code. */
VG_API int vg_dataset_reduce(vg_graph *g, vg_output ds, const vg_output *initial_state, int n,
                             vg_dataset_map_fn reduce_fn, void *payload, vg_output *outputs, const char *name);
/* FilterDataset: keeps the elements for which predicate (built like a map function,
 * one output: a bool scalar) is true. */
VG_API vg_output vg_dataset_filter(vg_graph *g, vg_output ds, vg_dataset_map_fn predicate, void *payload,
                                   const char *name);
/* UnbatchDataset: splits each element along its first dimension (all components must
 * share it: INVALID_ARGUMENT otherwise). */
VG_API vg_output vg_dataset_unbatch(vg_graph *g, vg_output ds, const char *name);
/* ConcatenateDataset: ds's elements, then other's (same component types). */
VG_API vg_output vg_dataset_concatenate(vg_graph *g, vg_output ds, vg_output other, const char *name);
/* ZipDataset: element i = the components of element i of each dataset, in order
 * (flattened); ends with the shortest. */
VG_API vg_output vg_dataset_zip(vg_graph *g, const vg_output *datasets, int n, const char *name);
/* ShardDataset: the elements whose index i has i % num_shards == index
 * (INVALID_ARGUMENT at run time for num_shards <= 0 or index out of range). */
VG_API vg_output vg_dataset_shard(vg_graph *g, vg_output ds, int64_t num_shards, int64_t index, const char *name);
/* ParallelMapDataset (map with num_parallel_calls; -1 = AUTOTUNE, 4 here): blocks of
 * 32 x num_parallel_calls elements are mapped concurrently on a per-iterator thread pool
 * and delivered in input order (the deterministic order of TF's non-sloppy mode); an
 * error is delivered at its element's position. num_parallel_calls 0 = vg_dataset_map. */
VG_API vg_output vg_dataset_map_parallel(vg_graph *g, vg_output ds, vg_dataset_map_fn fn, void *payload,
                                         int num_parallel_calls, const char *name);
/* BatchDatasetV2: stacks batch_size consecutive elements (component shapes must agree:
 * INVALID_ARGUMENT "Cannot batch tensors with different shapes in component ...");
 * the last, smaller batch is dropped when drop_remainder. */
VG_API vg_output vg_dataset_batch(vg_graph *g, vg_output ds, int64_t batch_size, bool drop_remainder,
                                  const char *name);
/* PaddedBatchDatasetV2: as batch, component c padded to padded_shapes[c] (NULL = the
 * component's own build-time shape; -1 dimensions become the batch's largest size) with
 * padding_values[c] (NULL or {NULL,0}: zero / ""). An element larger than a fixed
 * padded dimension fails with INVALID_ARGUMENT "Attempted to pad to a smaller size than
 * the input element ...". Build-time errors (the graph's sticky INVALID_ARGUMENT, TF's
 * ValueError / TypeError): "The padded shape (1,) is not compatible with the
 * corresponding input component shape ()." (another rank, or a known input dimension
 * larger than a known padded one), "Padding value should be a scalar, but is not: ...",
 * "Padding value tensor (...) does not match output type: ...". */
VG_API vg_output vg_dataset_padded_batch(vg_graph *g, vg_output ds, int64_t batch_size, const vg_shape *padded_shapes,
                                         const vg_output *padding_values, bool drop_remainder, const char *name);
/* ShuffleDataset: a buffer of buffer_size elements, each output drawn uniformly from it.
 * seed 0 = the graph seed rules; both unset: the op draws random seeds each time it
 * runs (once per dataset, as TF), so without reshuffling every epoch of a repeat has
 * the same order. reshuffle_each_iteration: each new iterator over it (e.g. each epoch
 * of a repeat) uses another order (counted per top-level iterator). */
VG_API vg_output vg_dataset_shuffle(vg_graph *g, vg_output ds, int64_t buffer_size, int64_t seed,
                                    bool reshuffle_each_iteration, const char *name);
/* RepeatDataset: count epochs (-1 = forever; an empty input then ends at once). */
VG_API vg_output vg_dataset_repeat(vg_graph *g, vg_output ds, int64_t count, const char *name);
/* TakeDataset (count -1 = all) / SkipDataset (count -1 = all). */
VG_API vg_output vg_dataset_take(vg_graph *g, vg_output ds, int64_t count, const char *name);
VG_API vg_output vg_dataset_skip(vg_graph *g, vg_output ds, int64_t count, const char *name);
/* CacheDataset (Dataset.cache(filename)): filename NULL/"" caches in memory: the first
 * pass that reaches the end publishes its elements, later passes (the next epochs of a
 * repeat) replay them without reading the input. Memory grows with the whole dataset:
 * the user's choice, as in TF. A filename caches on disk: the first iterator that finds
 * no "<filename>.index" writes every element into a tensor bundle at prefix filename
 * (finished when its input ends; nothing is left if it is dropped earlier), and every
 * iterator that finds the bundle (later epochs, later sessions and processes) reads it
 * instead of the input. Write errors fail get_next (RESOURCE_EXHAUSTED for a full disk,
 * PERMISSION_DENIED); a corrupt cache file is DATA_LOSS naming it. */
VG_API vg_output vg_dataset_cache(vg_graph *g, vg_output ds, const char *filename, const char *name);
/* tf.data.experimental.ignore_errors() (IgnoreErrorsDataset): elements whose
 * production fails are dropped (session cancellation still ends the iteration). A
 * TFRecord or text file whose read fails (missing, corrupt, truncated) is left after its
 * error, as TF does, so with ignore_errors a corrupt file ends early and the next file
 * is read. */
VG_API vg_output vg_dataset_ignore_errors(vg_graph *g, vg_output ds, const char *name);
/* PrefetchDataset: a background thread keeps up to buffer_size (>= 1) elements ready;
 * -1 (AUTOTUNE) and 0 keep one. Errors reach get_next in order. A buffer_size below -1
 * fails the iterator's initialization with VG_INVALID_ARGUMENT, as in TF. */
VG_API vg_output vg_dataset_prefetch(vg_graph *g, vg_output ds, int64_t buffer_size, const char *name);

/* ---- iterators ---------------------------------------------------------- */
/* IteratorV2 with the dataset's output_types/shapes: a handle; initialize it with the
 * op vg_make_iterator returns (MakeIterator(dataset, iterator); running it again
 * restarts from the beginning). get_next before that: FAILED_PRECONDITION
 * "GetNext() failed because the iterator has not been initialized. ...". */
VG_API vg_output vg_iterator(vg_graph *g, vg_output ds, const char *name);
VG_API vg_op *vg_make_iterator(vg_graph *g, vg_output ds, vg_output iterator, const char *name);
/* make_initializable_iterator: the handle, and the initializer in *initializer. */
VG_API vg_output vg_make_initializable_iterator(vg_graph *g, vg_output ds, vg_op **initializer, const char *name);
/* make_one_shot_iterator: initialized on first use in each session. */
VG_API vg_output vg_make_one_shot_iterator(vg_graph *g, vg_output ds, const char *name);
/* Resumable input by replay (vg_make_saveable_from_iterator below restores the exact
 * state instead): an IteratorGetNext that also counts the elements it handed out in a global int64
 * variable "<iterator op>_position" (*position gets its value), which any Saver made
 * afterwards checkpoints with the model. In a session where that variable was restored
 * to N > 0, the first call skips N elements, so a deterministic pipeline (seeded
 * shuffles; sequential or ordered-parallel maps) continues with the next unseen element
 * after a crash and restore. Skipping re-reads the input (~0.3 M records/s); running
 * the iterator's initializer starts the count again. Returns the op (outputs as
 * vg_iterator_get_next). */
VG_API vg_op *vg_iterator_get_next_resumable(vg_graph *g, vg_output iterator, vg_output *position, const char *name);

/* ---- iterator state in checkpoints ---------------------------------------- */
/* tf.data.experimental.make_saveable_from_iterator(iterator) followed by
 * tf.add_to_collection(SAVEABLE_OBJECTS, ...):
 *
 *     vg_op *init;
 *     vg_output ds = vg_dataset_shuffle(g, vg_dataset_range(g, 0, 100, 1, NULL), 10, 0, true, NULL);
 *     vg_output it = vg_make_initializable_iterator(g, ds, &init, "Iterator");
 *     vg_make_saveable_from_iterator(g, it, NULL);
 *     vg_saver *saver = vg_saver_new(g, NULL, &st);  // variables + "Iterator:0-state"
 *     ...
 *     vg_saver_free(saver);
 *
 * Adds SerializeIterator(iterator) to g and registers the iterator as a saveable object
 * of g: every Saver created afterwards without a var_list (also a Scaffold's default
 * saver) saves the iterator's whole state under the key "<iterator tensor>-state" (TF's
 * key, e.g. "Iterator:0-state") and restores it with DeserializeIterator(iterator,
 * state). The state holds the dataset's description (TF saves its GraphDef) and the
 * exact position, buffers included (shuffle buffer and RNG, prefetch ring, a map's
 * read-ahead, open interleave cycles, the file offsets of the readers), so a restore
 * needs no initializer run first and continues with the next element; running the
 * initializer after a restore starts over, as in TF. The state is vigil's own bytes in
 * a string scalar (TF writes a DT_VARIANT tensor whose encoding is internal to TF); the
 * dataset's functions travel in it as GraphDefs, so it restores into any graph.
 * Returns the SerializeIterator op's output (the saveable; it may also be listed in a
 * saver's var_list). Builder errors: the graph's sticky INVALID_ARGUMENT when iterator
 * is not an iterator or already has a saveable. A save fails with FAILED_PRECONDITION
 * for an iterator never initialized, INVALID_ARGUMENT for a function with a stateful op
 * (random ops, variables: as TF 1.15), UNIMPLEMENTED naming the dataset op for an
 * element that cannot be saved (one holding a dataset); a restore with NOT_FOUND for a
 * missing file, DATA_LOSS for a file shorter than the saved position, INVALID_ARGUMENT
 * for bytes that are not such a state (the iterator is then unchanged). */
VG_API vg_output vg_make_saveable_from_iterator(vg_graph *g, vg_output iterator, const char *name);
/* The saveable objects registered in g, in registration order (for savers). */
VG_API int vg_graph_num_saveables(const vg_graph *g);
VG_API vg_output vg_graph_saveable(const vg_graph *g, int i);
/* The checkpoint key of saveable t (borrowed from its graph), or NULL when t is not a
 * saveable made by vg_make_saveable_from_iterator (or by the cuDNN RNN layers,
 * vigil/cudnn_rnn.h, whose saveables restore into their opaque buffer). */
VG_API const char *vg_saveable_key(vg_output t);
/* The op restoring saveable t from `restored` (e.g. a RestoreV2 output):
 * DeserializeIterator(iterator, restored). NULL (and the graph's sticky
 * INVALID_ARGUMENT) when t is not a saveable. */
VG_API vg_op *vg_saveable_restore(vg_graph *g, vg_output t, vg_output restored, const char *name);
/* Feedable iterators: Iterator.string_handle() (IteratorToStringHandle: a string
 * scalar naming the iterator in its session) and Iterator.from_string_handle(handle,
 * types/shapes of `structure`, a dataset or iterator) (IteratorFromStringHandleV2:
 * the iterator that a fed handle names; NOT_FOUND when it names none of this session,
 * INVALID_ARGUMENT when its element types differ). Feed the handle of a train or an eval
 * iterator into a string placeholder to switch between them without rebuilding. */
VG_API vg_output vg_iterator_string_handle(vg_graph *g, vg_output iterator, const char *name);
VG_API vg_output vg_iterator_from_string_handle(vg_graph *g, vg_output string_handle, vg_output structure,
                                                const char *name);
/* IteratorGetNext: output i = component i of the next element; OUT_OF_RANGE "End of
 * sequence" after the last one (and on every later call). */
VG_API vg_op *vg_iterator_get_next(vg_graph *g, vg_output iterator, const char *name);

/* The element signature of an iterator handle: the output_types / output_shapes
 * attributes of the op that made `iterator` (IteratorV2, OneShotIterator,
 * IteratorFromStringHandleV2, ...), as IteratorGetNext needs them. On success
 * *types / *shapes point into that op's attributes (borrowed: owned by its graph, valid
 * while the graph lives), *n_types / *n_shapes get their lengths, and it returns 1.
 * When iterator.op is NULL or has no such attributes it returns 0, leaves the outputs
 * unset and, unless g already holds an error, sets g's sticky VG_INVALID_ARGUMENT
 * "<what>: not an iterator" (`what` names the caller; NULL: "iterator"). */
VG_API int vg_iterator_signature(vg_graph *g, vg_output iterator, const char *what, const vg_dtype **types,
                                 const vg_shape **shapes, int *n_types, int *n_shapes);

#ifdef __cplusplus
}
#endif
#endif
