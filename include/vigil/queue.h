/*
 * vigil/queue.h - queues, queue runners and TF1's input pipeline
 * (tf.train.range_input_producer / batch / shuffle_batch), plus the IDX record op for
 * MNIST-format data. The queue ops and the IDX record op themselves are declared in
 * vigil/queue_ops.h (included here).
 *
 *     vg_output q = vg_range_input_producer(g, 60000, num_epochs, true, seed, 1024, NULL);
 *     vg_op *ids = vg_queue_dequeue_many(g, q, vg_const_i32(g, 256, "read_n"), "read_ids");
 *     vg_op *rec = vg_idx_record(g, images_path, labels_path, vg_out(ids, 0), "read");
 *     vg_output batch[2];
 *     vg_shuffle_batch(g, (vg_output[]){vg_out(rec,0), vg_out(rec,1)}, 2, 64, 10000, 5000, 1,
 *                      seed, true, NULL, batch);     // enqueue_many: 256 records a run
 *     vg_op *local_init = vg_local_variables_initializer(g);
 *     ... create the session, run local_init (the epoch counter), then:
 *     vg_start_queue_runners(sess, coord, &st);     // threads registered with coord
 *     ... vg_session_run fetching batch[0], batch[1] until OUT_OF_RANGE ...
 *     vg_coord_request_stop(coord, NULL); vg_coord_join(coord, 10, false, &st);
 *
 * Queue semantics are TF's: dequeue waits for enough elements; after close the remaining
 * elements drain, then dequeue fails with OUT_OF_RANGE; enqueue after close fails with
 * CANCELLED; closing the session cancels blocked queue ops (CANCELLED) without hanging.
 */
#ifndef VIGIL_QUEUE_H
#define VIGIL_QUEUE_H

#include "coordinator.h"
#include "queue_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- queue runners ------------------------------------------------------- */
/* tf.train.add_queue_runner with a QueueRunner(queue, enqueue_ops): close op and cancel
 * op are created here, under the current name scope ("<queue>_Close",
 * "<queue>_Close_1"). The same op may be listed several times (one thread each).
 * Returns the code (the graph's sticky error; INVALID_ARGUMENT for missing ops). */
VG_API vg_code vg_add_queue_runner(vg_graph *g, vg_output queue, vg_op *const *enqueue_ops, int n);

/* tf.train.start_queue_runners: for every queue runner of the session's graph, starts
 * one thread per enqueue op (looping it until a stop is requested; OUT_OF_RANGE ends
 * the thread, and the last one of the runner runs the close op; other errors are
 * reported to coord) and one thread that runs the cancel op once a stop is requested.
 * Threads are registered with coord (join them with vg_coord_join). A runner whose
 * threads still run on this session is not started again. The session must outlive
 * the threads; closing it ends them (they request a plain stop). Fails with
 * RESOURCE_EXHAUSTED, INVALID_ARGUMENT (NULL session or coordinator). */
VG_API vg_code vg_start_queue_runners(vg_session *sess, vg_coord *coord, vg_status *st);

/* ---- input pipeline ----------------------------------------------------- */
/* tf.train.range_input_producer(limit, num_epochs, shuffle, seed, capacity): a queue of
 * int32 indices 0..limit-1, reshuffled every epoch when shuffle; num_epochs > 0 limits
 * the epochs (counted in a local variable "<name>/limit_epochs/epochs": run
 * vg_local_variables_initializer before starting the runners; the epoch after the last
 * fails with OUT_OF_RANGE and closes the queue); 0 = unlimited. name NULL =
 * "input_producer" (ops laid out as TF's). seed 0 = the graph seed rules. Returns the
 * queue handle; dequeue from it. Failures are the graph's sticky error. */
VG_API vg_output vg_range_input_producer(vg_graph *g, int64_t limit, int64_t num_epochs, bool shuffle,
                                         int64_t seed, int capacity, const char *name);
/* tf.train.batch(tensors, batch_size, num_threads, capacity, enqueue_many): outputs[i]
 * gets the batched tensor i (first dim batch_size). allow_smaller_final_batch false.
 * The tensors' shapes (without the first dim when enqueue_many) must be fully defined.
 * Ops: "<name>/fifo_queue", "<name>/fifo_queue_enqueue" (one thread per num_threads),
 * "<name>/n" and the DequeueMany "<name>" (name NULL = "batch"); no summary. Returns
 * VG_OK or the graph's sticky error (INVALID_ARGUMENT for bad arguments). */
VG_API vg_code vg_batch(vg_graph *g, const vg_output *tensors, int n, int batch_size, int num_threads,
                        int capacity, bool enqueue_many, const char *name, vg_output *outputs);
/* tf.train.shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, num_threads,
 * seed, enqueue_many): as vg_batch with a RandomShuffleQueue ("<name>/
 * random_shuffle_queue", name NULL = "shuffle_batch"); capacity must exceed
 * min_after_dequeue. */
VG_API vg_code vg_shuffle_batch(vg_graph *g, const vg_output *tensors, int n, int batch_size, int capacity,
                                int min_after_dequeue, int num_threads, int64_t seed, bool enqueue_many,
                                const char *name, vg_output *outputs);
/* tf.train.batch with all its options: dynamic_pad (a PaddingFIFOQueue: tensors need a
 * known rank, dims may vary; each batch is padded to its largest element with zeros or
 * "") and allow_smaller_final_batch (DequeueUpTo: after the input closes, the last
 * batch holds what is left instead of failing with OUT_OF_RANGE). */
VG_API vg_code vg_batch_ex(vg_graph *g, const vg_output *tensors, int n, int batch_size, int num_threads,
                           int capacity, bool enqueue_many, bool dynamic_pad, bool allow_smaller_final_batch,
                           const char *name, vg_output *outputs);
/* tf.train.shuffle_batch with allow_smaller_final_batch. */
VG_API vg_code vg_shuffle_batch_ex(vg_graph *g, const vg_output *tensors, int n, int batch_size, int capacity,
                                   int min_after_dequeue, int num_threads, int64_t seed, bool enqueue_many,
                                   bool allow_smaller_final_batch, const char *name, vg_output *outputs);
/* tf.train.batch_join / shuffle_batch_join(tensors_list, ...): nlists lists of n tensors
 * (tensors_list[l * n + i]; same dtypes, and same shapes unless dynamic_pad), one
 * enqueue op and thread per list into one queue ("batch_join/fifo_queue",
 * "shuffle_batch_join/random_shuffle_queue"), so several readers feed one batch. */
VG_API vg_code vg_batch_join(vg_graph *g, const vg_output *tensors_list, int nlists, int n, int batch_size,
                             int capacity, bool enqueue_many, bool dynamic_pad, bool allow_smaller_final_batch,
                             const char *name, vg_output *outputs);
VG_API vg_code vg_shuffle_batch_join(vg_graph *g, const vg_output *tensors_list, int nlists, int n, int batch_size,
                                     int capacity, int min_after_dequeue, int64_t seed, bool enqueue_many,
                                     bool allow_smaller_final_batch, const char *name, vg_output *outputs);

#ifdef __cplusplus
}
#endif
#endif
