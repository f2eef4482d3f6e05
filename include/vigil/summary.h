/*
 * vigil/summary.h - summaries (tf.summary.scalar / histogram / merge / merge_all) and
 * event files (tf.summary.FileWriter, SummaryWriterCache) that TensorBoard reads.
 *
 *     vg_summary_scalar(g, "loss", loss);                  // op "loss", in "summaries"
 *     vg_summary_histogram(g, "weights", w);
 *     vg_output merged = vg_summary_merge_all(g);           // op "Merge/MergeSummary"
 *     vg_status st;
 *     vg_file_writer *w = vg_file_writer_cache_get("runs/m", &st);  // borrowed, one per dir
 *     ...run merged into `out`, then:
 *     size_t len;
 *     const char *bytes = vg_tensor_string(out, 0, &len);
 *     vg_file_writer_add_summary(w, bytes, len, step, &st);
 *     ...
 *     vg_file_writer_cache_clear();                         // at exit: flush and free
 *
 * Event file layout: a TFRecord file (per record: fixed64 length, fixed32 masked
 * CRC-32C of the length, the bytes, fixed32 masked CRC-32C of the bytes) of serialized
 * tensorflow.Event protos, named "<logdir>/events.out.tfevents.<10-digit secs>.<hostname>
 * <suffix>". The first record is {wall_time = creation secs, file_version =
 * "brain.Event:2"}. Every later Event is {wall_time = 1 (double, seconds), step = 2
 * (omitted when 0), then one of: graph_def = 4, summary = 5, session_log = 7
 * {status = 1, checkpoint_path = 2, msg = 3}, tagged_run_metadata = 8 {tag = 1,
 * run_metadata = 2}, meta_graph_def = 9}. Scalars are TF1 style: Summary.Value {tag = 1,
 * simple_value = 2 (float)}; histograms Value {tag = 1, histo = 5 HistogramProto}.
 */
#ifndef VIGIL_SUMMARY_H
#define VIGIL_SUMMARY_H

#include "session.h"
#include "events.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- summary ops -------------------------------------------------------- */
/* The builders record failures in the graph (sticky error, see graph.h) and return
 * {NULL,0}. tag/name characters other than [-/A-Za-z0-9_.] become '_' (TF's
 * clean_tag). TF names a summary op after its tag through a name scope: the first
 * vg_summary_scalar(g, "loss", x) creates Const "loss/tags" and ScalarSummary "loss";
 * the second "loss_1/tags" and "loss_1"; under name scope "train" the op is
 * "train/loss". The tag written into the Summary is that op name. */

/* ScalarSummary(tags, values): a string scalar holding a serialized Summary with one
 * Value{tag, simple_value = float(value)}. value: a float, double, int32, int64 or uint8
 * scalar. Added to collection VG_SUMMARIES. Fails (graph error) with INVALID_ARGUMENT
 * (empty tag, wrong dtype). */
VG_API vg_output vg_summary_scalar(vg_graph *g, const char *tag, vg_output value);
/* HistogramSummary(tag, values): Value{tag, histo} over all elements of values (any
 * shape; same dtypes as above) with TF's default bucket limits; runs of empty buckets
 * are collapsed as TF does. Added to VG_SUMMARIES. A NULL/empty tag becomes
 * "HistogramSummary". At run time NaN or Inf fails with INVALID_ARGUMENT
 * "Nan in summary histogram for: <op name>". */
VG_API vg_output vg_summary_histogram(vg_graph *g, const char *tag, vg_output values);
/* tf.summary.image(name, tensor, max_outputs): ImageSummary(tag, tensor) with attr
 * max_images = max_outputs (>= 1), tensor uint8, float or double [batch, h, w, c] with c
 * 1, 3 or 4. Each of the first max_outputs images becomes a Value{tag "<name>/image/<i>"
 * ("<name>/image" when max_outputs is 1), image{height, width, colorspace = c,
 * encoded_image_string = PNG}} that TensorBoard shows; float images are scaled into
 * [0, 255] per image as TF does (non-finite pixels red). Added to VG_SUMMARIES.
 * INVALID_ARGUMENT (graph error) for a bad rank, channel count or dtype. */
VG_API vg_output vg_summary_image(vg_graph *g, const char *name, vg_output tensor, int max_outputs);
/* MergeSummary(inputs): one Summary holding the values of all input Summaries (string
 * tensors of any shape) in order. The op is "<name>/<name>", or "Merge/MergeSummary"
 * when name is NULL (TF). Not added to any collection. n < 1 is a graph error
 * (INVALID_ARGUMENT). At run time a non-empty tag found twice fails with
 * INVALID_ARGUMENT "Duplicate tag <tag> found in summary inputs". */
VG_API vg_output vg_summary_merge(vg_graph *g, const vg_output *summaries, int n, const char *name);
/* tf.summary.merge_all(): MergeSummary "Merge/MergeSummary" of the VG_SUMMARIES
 * collection; {NULL,0} (and no error) when the collection is empty. */
VG_API vg_output vg_summary_merge_all(vg_graph *g);

/* ---- event file writer -------------------------------------------------- */
/* A FileWriter owns one event file at a time and a background thread. add_* calls
 * encode the Event (wall_time = now) and queue it; the thread writes and fsyncs the
 * queue every flush_secs and on vg_file_writer_flush/close. An add that fills the
 * queue writes the queued events to the file itself before it returns (readable there,
 * not fsynced: TF's writer too syncs only every flush_secs). All functions are
 * thread-safe, except that vg_file_writer_free must not race with other calls.
 * A write error of the thread (disk full, ...; the message names the file) is returned
 * by the next call on the writer, with the count of events lost. The event file keeps
 * its first error (its last record may be torn), so later writes fail too until the
 * writer is closed and reopened on a new file. After close, add_* calls do nothing (a
 * warning is logged once) until reopen. */
typedef struct vg_file_writer vg_file_writer;

typedef struct vg_file_writer_options {
    int max_queue;               /* 0: TF's 10. Most events queued before an add blocks to write them */
    double flush_secs;           /* 0: TF's 120. Queued events reach the disk at least this often */
    const char *filename_suffix; /* NULL or "": appended to the event file name */
    bool flush_every_add;        /* true: flush_secs 0 (every event is flushed at once) */
} vg_file_writer_options;

/* Creates dir (recursively) and a new event file in it (its first record written and
 * flushed) and starts the writer thread. opts may be NULL (defaults). If this second's
 * file name exists already (close + reopen, two writers on one dir) it waits for the
 * next second rather than overwrite it; the file is created O_EXCL | O_NOFOLLOW, so a
 * name still taken (a symlink planted there too) moves on to a later second's name and
 * nothing existing is truncated or followed. Ownership: vg_file_writer_free.
 * Fails with INVALID_ARGUMENT (empty dir, bad options), PERMISSION_DENIED / NOT_FOUND /
 * FAILED_PRECONDITION (cannot create the directory or file; the message names it),
 * RESOURCE_EXHAUSTED. */
VG_API vg_file_writer *vg_file_writer_new(const char *dir, const vg_file_writer_options *opts, vg_status *st);
/* Flushes everything queued, closes the file, stops the thread and frees. Errors are
 * logged. NULL is a no-op. Never call it on a writer from vg_file_writer_cache_get. */
VG_API void vg_file_writer_free(vg_file_writer *w);

/* Queues an Event {step, summary} (the bytes are copied). summary is a serialized
 * Summary (e.g. the output of a summary op); a Value's metadata is kept only the first
 * time its tag is seen by this writer (TF). Returns an earlier background error if
 * there is one (this event is still queued). Fails with INVALID_ARGUMENT (not a
 * Summary), RESOURCE_EXHAUSTED, background write errors. */
VG_API vg_code vg_file_writer_add_summary(vg_file_writer *w, const void *summary, size_t len, int64_t step, vg_status *st);
/* Queues a summary Event with one Value{tag, simple_value = (float)value} (no graph
 * op needed). Fails like add_summary. */
VG_API vg_code vg_file_writer_add_scalar(vg_file_writer *w, const char *tag, double value, int64_t step, vg_status *st);
/* Queues a graph_def Event with the graph's GraphDef (vg_graph_to_graphdef; TensorBoard's
 * graph tab). step 0 writes an event without a step (TF's global_step=None). Fails
 * with RESOURCE_EXHAUSTED, background write errors. */
VG_API vg_code vg_file_writer_add_graph(vg_file_writer *w, const vg_graph *g, int64_t step, vg_status *st);
/* Queues a meta_graph_def Event with a serialized MetaGraphDef (copied). */
VG_API vg_code vg_file_writer_add_meta_graph(vg_file_writer *w, const void *meta_graph_def, size_t len, int64_t step, vg_status *st);

/* SessionLog.status: vg_session_log_status (vigil/events.h). */
/* Queues a session_log Event {status, checkpoint_path, msg} (NULL strings = absent;
 * CHECKPOINT events carry the checkpoint prefix). Fails with INVALID_ARGUMENT (status
 * out of range), background write errors. */
VG_API vg_code vg_file_writer_add_session_log(vg_file_writer *w, vg_session_log_status status, const char *checkpoint_path, const char *msg, int64_t step, vg_status *st);
/* Queues a tagged_run_metadata Event {tag, vg_run_metadata_serialize(md)} (ProfilerHook:
 * tag "step_<n>"). A tag may be used once per writer: INVALID_ARGUMENT otherwise. */
VG_API vg_code vg_file_writer_add_run_metadata(vg_file_writer *w, const vg_run_metadata *md, const char *tag, int64_t step, vg_status *st);
/* Writes everything queued and fsyncs; returns when it is on disk. Fails with the
 * write error (RESOURCE_EXHAUSTED for a full disk, UNKNOWN for EIO, naming the file). */
VG_API vg_code vg_file_writer_flush(vg_file_writer *w, vg_status *st);
/* Flushes and closes the file; the writer stays usable through reopen. Closing twice is
 * harmless. Fails like flush. */
VG_API vg_code vg_file_writer_close(vg_file_writer *w, vg_status *st);
/* After close: opens a new event file in the same dir (TF's reopen). Does nothing when
 * the writer is open. Fails like vg_file_writer_new. */
VG_API vg_code vg_file_writer_reopen(vg_file_writer *w, vg_status *st);
/* The current (after close: the last) event file's path. Borrowed: valid until reopen
 * or free. */
VG_API const char *vg_file_writer_path(const vg_file_writer *w);
/* The directory given to vg_file_writer_new. Borrowed for the writer's lifetime. */
VG_API const char *vg_file_writer_logdir(const vg_file_writer *w);

/* ---- SummaryWriterCache ------------------------------------------------- */
/* One writer per directory string for the whole process (the hooks share them); made
 * with the default options on first use. Thread-safe. Returns a borrowed writer, valid
 * until vg_file_writer_cache_clear() (do not free it). Fails like vg_file_writer_new. */
VG_API vg_file_writer *vg_file_writer_cache_get(const char *dir, vg_status *st);
/* Flushes, closes and frees every cached writer. Call it when no other thread uses
 * them (typically at exit). */
VG_API void vg_file_writer_cache_clear(void);

/* ---- run metadata as a Chrome trace ------------------------------------- */
/* The run metadata's node stats as Chrome trace JSON (chrome://tracing, Perfetto) in
 * the shape of TF's timeline.py: {"traceEvents":[...]} with "M" process_name events
 * (pid 0 "Allocators", pid 1 "<CPU device> Compute", pid 2 "<CPU device> Tensors"),
 * "M" thread_name events, and one complete event per op {"ph":"X","cat":"Op","name":
 * <op type>,"pid":1,"tid":<thread id>,"ts":<start us>,"dur":<us>,"args":{"name":<node
 * name>,"op":<op type>}}. show_memory adds "C" counter events (pid 0) with the bytes of
 * each op's outputs. *json is NUL-terminated (*len excludes the NUL), from the vigil
 * allocator: free with vg_free. Fails with INVALID_ARGUMENT (NULL md/json),
 * RESOURCE_EXHAUSTED. */
VG_API vg_code vg_run_metadata_to_chrome_trace(const vg_run_metadata *md, bool show_memory, char **json, size_t *len, vg_status *st);

#ifdef __cplusplus
}
#endif
#endif
