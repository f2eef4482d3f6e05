/*
 * vigil/queue.h - queues, queue runners and TF1's input pipeline
 * (tf.train.range_input_producer / batch / shuffle_batch), plus the IDX record op for
 * MNIST-format data.
 *
 *     vg_output idx = vg_range_input_producer(g, 60000, num_epochs, true, seed, 32, "input");
 *     vg_op *rec = vg_idx_record(g, images_path, labels_path, idx_batch, "read");
 *     vg_output batch[2];
 *     vg_shuffle_batch(g, (vg_output[]){vg_out(rec,0), vg_out(rec,1)}, 2, 64, 10000, 5000, 1,
 *                      seed, true, "shuffle_batch", batch);
 *     ... after creating the session:
 *     vg_start_queue_runners(sess, coord, &st);     // threads registered with coord
 *
 * Queue semantics are TF's: dequeue waits for enough elements; after close the remaining
 * elements drain, then dequeue fails with OUT_OF_RANGE; enqueue after close fails with
 * CANCELLED; closing the session cancels blocked queue ops (CANCELLED) without hanging.
 */
#ifndef VIGIL_QUEUE_H
#define VIGIL_QUEUE_H

#include "coordinator.h"
#include "session.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- queue ops (each returns the op's output 0; the queue op returns its handle) */
/* FIFOQueueV2(component_types, shapes, capacity). shapes may be NULL (unknown). */
VG_API vg_output vg_fifo_queue(vg_graph *g, const vg_dtype *types, const vg_shape *shapes, int ncomponents,
                               int capacity, const char *name);
/* RandomShuffleQueueV2(component_types, shapes, capacity, min_after_dequeue, seed, seed2). */
VG_API vg_output vg_random_shuffle_queue(vg_graph *g, const vg_dtype *types, const vg_shape *shapes,
                                         int ncomponents, int capacity, int min_after_dequeue, int64_t seed,
                                         int64_t seed2, const char *name);
/* QueueEnqueueV2 / QueueEnqueueManyV2: returns the op. */
VG_API vg_op *vg_queue_enqueue(vg_graph *g, vg_output queue, const vg_output *components, int n, const char *name);
VG_API vg_op *vg_queue_enqueue_many(vg_graph *g, vg_output queue, const vg_output *components, int n, const char *name);
/* QueueDequeueV2 / ManyV2 / UpToV2: returns the op; output i is component i. */
VG_API vg_op *vg_queue_dequeue(vg_graph *g, vg_output queue, const char *name);
VG_API vg_op *vg_queue_dequeue_many(vg_graph *g, vg_output queue, vg_output n, const char *name);
VG_API vg_op *vg_queue_dequeue_up_to(vg_graph *g, vg_output queue, vg_output n, const char *name);
/* QueueCloseV2(cancel_pending_enqueues). */
VG_API vg_op *vg_queue_close(vg_graph *g, vg_output queue, bool cancel_pending_enqueues, const char *name);
/* QueueSizeV2: int32 scalar. */
VG_API vg_output vg_queue_size(vg_graph *g, vg_output queue, const char *name);

/* ---- queue runners ------------------------------------------------------- */
/* tf.train.add_queue_runner with a QueueRunner(queue, enqueue_ops): close op and cancel
 * op are created here ("<queue>_Close", "<queue>_Close_1"). Returns the code. */
VG_API vg_code vg_add_queue_runner(vg_graph *g, vg_output queue, vg_op *const *enqueue_ops, int n);

/* tf.train.start_queue_runners: for every queue runner of the session's graph, starts
 * one thread per enqueue op (looping it until a stop is requested; OUT_OF_RANGE closes
 * the queue and ends the thread; other errors are reported to coord) and one thread
 * that runs the cancel op once a stop is requested. Threads are registered with coord
 * (join them with vg_coord_join). The session must outlive the threads. Fails with
 * RESOURCE_EXHAUSTED. */
VG_API vg_code vg_start_queue_runners(vg_session *sess, vg_coord *coord, vg_status *st);

/* ---- input pipeline ----------------------------------------------------- */
/* tf.train.range_input_producer(limit, num_epochs, shuffle, seed, capacity): a queue of
 * int32 indices 0..limit-1, reshuffled every epoch when shuffle; num_epochs > 0 limits
 * the epochs (counted in a local variable "<name>/limit_epochs/epochs"; the epoch after
 * the last fails with OUT_OF_RANGE and closes the queue). Returns the queue handle;
 * dequeue from it (or use vg_input_dequeue_many). */
VG_API vg_output vg_range_input_producer(vg_graph *g, int64_t limit, int64_t num_epochs, bool shuffle,
                                         int64_t seed, int capacity, const char *name);
/* tf.train.batch(tensors, batch_size, num_threads, capacity, enqueue_many): outputs[i]
 * gets the batched tensor i (first dim batch_size). allow_smaller_final_batch false. */
VG_API vg_code vg_batch(vg_graph *g, const vg_output *tensors, int n, int batch_size, int num_threads,
                        int capacity, bool enqueue_many, const char *name, vg_output *outputs);
/* tf.train.shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, num_threads,
 * seed, enqueue_many). */
VG_API vg_code vg_shuffle_batch(vg_graph *g, const vg_output *tensors, int n, int batch_size, int capacity,
                                int min_after_dequeue, int num_threads, int64_t seed, bool enqueue_many,
                                const char *name, vg_output *outputs);

/* IdxRecord(indices): reads MNIST-format IDX files (gzip'd or plain; loaded once per
 * session) and gives, for an int32/int64 index tensor of shape S, output 0 = images
 * uint8 S+[rows, cols] and output 1 = labels int64 S. Run-time errors: a missing file
 * gives NOT_FOUND with the path, bad magic or truncation DATA_LOSS, an index out of
 * range INVALID_ARGUMENT. Returns the op. */
VG_API vg_op *vg_idx_record(vg_graph *g, const char *images_path, const char *labels_path, vg_output indices,
                            const char *name);

#ifdef __cplusplus
}
#endif
#endif
