/*
 * vigil/reader.h - TF1's queue-based record readers (tf.TFRecordReader,
 * tf.FixedLengthRecordReader, tf.TextLineReader, tf.WholeFileReader) and
 * tf.train.string_input_producer.
 *
 *     vg_output names = vg_placeholder(g, VG_STRING, (int64_t[]){2}, 1, "files"); // fed: 2 file names
 *     vg_output fq = vg_string_input_producer(g, names, 2, true, 0, 32, NULL);
 *     vg_output rd = vg_tfrecord_reader(g, "GZIP", NULL);
 *     vg_op *read = vg_reader_read(g, rd, fq, NULL);       // key, value
 *
 * Then parse vg_out(read, 1), batch it and run it under a MonitoredSession: the epoch
 * after the last ends with OUT_OF_RANGE, which the monitored session treats as the end
 * of input.
 *
 * A reader is a resource of the session (one per reader op, or per shared_name),
 * like the queues. Reading: when the reader has no current file it dequeues the next
 * name from the queue (blocking; when that queue is closed and empty the read fails
 * with its OUT_OF_RANGE), opens it (NOT_FOUND naming a missing file) and produces its
 * records; at a file's end it moves to the next one. Keys are TF's:
 * "<file>:<offset>" (TFRecord, offset in the uncompressed stream), "<file>:<record
 * number>" (fixed length), "<file>:<line number>" (text lines, 1-based, header lines
 * counted), "<file>" (whole file). A corrupt or truncated TFRecord gives DATA_LOSS
 * naming the file and the offset (the reader stays on that record). Reads of one reader
 * are serialized; different readers run in parallel.
 */
#ifndef VIGIL_READER_H
#define VIGIL_READER_H
#include "graph.h"
#ifdef __cplusplus
extern "C" {
#endif

/* Reader ops (each returns the reader handle). name NULL = TF's op type name.
 * compression_type: "" (NULL), "ZLIB" or "GZIP". */
VG_API vg_output vg_tfrecord_reader(vg_graph *g, const char *compression_type, const char *name);
/* FixedLengthRecordReaderV2: skips header_bytes, then records of record_bytes (> 0)
 * starting every hop_bytes (0 = record_bytes) while a whole record fits before the
 * last footer_bytes. */
VG_API vg_output vg_fixed_length_record_reader(vg_graph *g, int64_t header_bytes, int64_t record_bytes,
                                               int64_t footer_bytes, int64_t hop_bytes, const char *name);
/* TextLineReaderV2: one record per line ("\n" or "\r\n" removed; a last line without a
 * newline counts), after skipping skip_header_lines lines of each file. */
VG_API vg_output vg_text_line_reader(vg_graph *g, int64_t skip_header_lines, const char *name);
/* WholeFileReaderV2: one record per file, the whole contents. */
VG_API vg_output vg_whole_file_reader(vg_graph *g, const char *name);
/* IdentityReaderV2 (tf.IdentityReader): one record per work item, key and value both
 * the dequeued string itself. */
VG_API vg_output vg_identity_reader(vg_graph *g, const char *name);

/* ReaderReadV2(reader, queue): output 0 key, output 1 value (string scalars). */
VG_API vg_op *vg_reader_read(vg_graph *g, vg_output reader, vg_output queue, const char *name);
/* ReaderReadUpToV2(reader, queue, num_records int64 scalar): keys and values vectors of
 * up to num_records records. As TF's ReaderBase::ReadUpTo, one call does not cross the
 * end of a work unit once it has records: the records left in the current file come
 * back alone (7-record files in calls of up to 4: 4, 3, 4, 3), a whole-file or
 * identity reader gives one record per call. With none read, the queue's OUT_OF_RANGE
 * ends the input. */
VG_API vg_op *vg_reader_read_up_to(vg_graph *g, vg_output reader, vg_output queue, vg_output num_records,
                                   const char *name);
/* int64 scalars: records produced / files finished since creation or the last reset. */
VG_API vg_output vg_reader_num_records_produced(vg_graph *g, vg_output reader, const char *name);
VG_API vg_output vg_reader_num_work_units_completed(vg_graph *g, vg_output reader, const char *name);
/* ReaderResetV2: back to the initial state (no current file, counters zero). */
VG_API vg_op *vg_reader_reset(vg_graph *g, vg_output reader, const char *name);
/* ReaderSerializeStateV2 / ReaderRestoreStateV2 (reader.serialize_state(),
 * restore_state(state)), as TF 1.15 implements them:
 * - WholeFileReader and IdentityReader save TF's ReaderBaseState proto (work_started,
 *   work_finished, num_records_produced, current_work: the work item being read or
 *   last read), a string scalar that restore_state takes back (counters and work item
 *   as they were; the queue is not part of it). Restore fails with INVALID_ARGUMENT
 *   "Could not parse state for WholeFileReader '<op>': <escaped bytes>" for bytes
 *   that are not such a proto, "Unexpected negative value when restoring in ..." and
 *   "Inconsistent work started vs. finished when restoring in ..." as TF.
 * - TFRecordReader, FixedLengthRecordReader and TextLineReader fail with
 *   UNIMPLEMENTED "Reader SerializeState" / "Reader RestoreState" (TF's ReaderBase
 *   default: their file positions are not saveable).
 * A failed restore resets the reader (as TF's ReaderBase::RestoreState). The state
 * must be a string scalar: another dtype or a known rank > 0 is a build-time
 * INVALID_ARGUMENT (TF's ValueError), a fed non-scalar a run-time one. */
VG_API vg_output vg_reader_serialize_state(vg_graph *g, vg_output reader, const char *name);
VG_API vg_op *vg_reader_restore_state(vg_graph *g, vg_output reader, vg_output state, const char *name);
/* reader.supports_serialize: true for WholeFileReaderV2 and IdentityReaderV2 ops. */
VG_API bool vg_reader_supports_serialize(vg_output reader);

/* MatchingFiles (tf.io.matching_files): a string vector of the paths matching the glob
 * pattern(s) (a string scalar or vector), sorted; empty when nothing matches. */
VG_API vg_output vg_matching_files(vg_graph *g, vg_output pattern, const char *name);

/* tf.train.match_filenames_once(pattern, name): a local variable (name NULL =
 * "matching_filenames", in the local_variables collection, no fixed shape: TF's
 * validate_shape=False) initialised with MatchingFiles(pattern) when the local
 * variables initializer runs; pattern is a string scalar or vector of globs. Returns
 * the variable's value ("<name>/read"; the VariableV2 op is its input 0), a 1-D string
 * tensor of the sorted matches, to pass to vg_string_input_producer. As in TF, nothing
 * matching is not an error here: the list is empty, and string_input_producer's
 * Assert fails the queue runner with INVALID_ARGUMENT "assertion failed:
 * [string_input_producer requires a non-null input tensor]". Reading it before the
 * initializer ran is FAILED_PRECONDITION (uninitialized variable). Failures at build
 * time are the graph's sticky error (INVALID_ARGUMENT for a non-string pattern). */
VG_API vg_output vg_match_filenames_once(vg_graph *g, vg_output pattern, const char *name);

/* tf.train.string_input_producer(string_tensor, num_epochs, shuffle, seed, capacity):
 * a FIFO queue of file names (string_tensor: a 1-D string tensor, each epoch enqueued
 * whole, reshuffled per epoch when shuffle), fed by a queue runner. num_epochs > 0
 * counts epochs in a local variable "<name>/limit_epochs/epochs" (run the local
 * variables initializer first); the run after the last epoch closes the queue, so
 * readers then fail with OUT_OF_RANGE. 0 = unlimited. capacity 32 in TF. name NULL =
 * "input_producer". Returns the queue handle. Failures are the graph's sticky error
 * (INVALID_ARGUMENT for a non-string or non-vector tensor, or a constant empty one:
 * "string_input_producer requires a non-null input tensor"); a tensor that is empty at
 * run time fails TF's Assert with that message (INVALID_ARGUMENT in the queue runner,
 * reported to the coordinator). */
VG_API vg_output vg_string_input_producer(vg_graph *g, vg_output string_tensor, int64_t num_epochs, bool shuffle,
                                          int64_t seed, int capacity, const char *name);

#ifdef __cplusplus
}
#endif
#endif
