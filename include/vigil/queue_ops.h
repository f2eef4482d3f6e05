/*
 * vigil/queue_ops.h - the queue ops (FIFOQueueV2, RandomShuffleQueueV2, enqueue,
 * dequeue, close, size) and the IDX record op: op builders of the kernel layer. Queue
 * runners and the input pipeline built on them are in vigil/queue.h, which includes
 * this header (see the example there).
 */
#ifndef VIGIL_QUEUE_OPS_H
#define VIGIL_QUEUE_OPS_H

#include "session.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- queue ops (each returns the op's output 0; the queue op returns its handle) */
/* A queue lives in the session (one per queue op, or per shared_name attr) and holds
 * copies of what was enqueued. Names default to TF's: "fifo_queue",
 * "random_shuffle_queue", "<queue>_enqueue", "<queue>_EnqueueMany", "<queue>_Dequeue",
 * "<queue>_DequeueMany", "<queue>_DequeueUpTo", "<queue>_Close", "<queue>_Size".
 * Run-time errors: INVALID_ARGUMENT (wrong component count, dtype or shape),
 * CANCELLED (enqueue on a closed queue, close with cancel_pending_enqueues, session
 * closed), OUT_OF_RANGE (closed and too few elements left), DEADLINE_EXCEEDED
 * (run_options.timeout_in_ms). */
/* FIFOQueueV2(component_types, shapes, capacity). shapes may be NULL (unspecified: any
 * shape may be enqueued, but DequeueMany/UpTo fail); given shapes must be fully
 * defined. capacity < 0: unbounded. */
VG_API vg_output vg_fifo_queue(vg_graph *g, const vg_dtype *types, const vg_shape *shapes, int ncomponents,
                               int capacity, const char *name);
/* PaddingFIFOQueueV2(component_types, shapes, capacity): shapes are required, with -1
 * for dims that vary; DequeueMany / DequeueUpTo pad every component to the batch's
 * largest size in each dim (zeros, "" for strings) as TF's tf.PaddingFIFOQueue. */
VG_API vg_output vg_padding_fifo_queue(vg_graph *g, const vg_dtype *types, const vg_shape *shapes, int ncomponents,
                                       int capacity, const char *name);
/* RandomShuffleQueueV2(component_types, shapes, capacity, min_after_dequeue, seed, seed2). */
VG_API vg_output vg_random_shuffle_queue(vg_graph *g, const vg_dtype *types, const vg_shape *shapes,
                                         int ncomponents, int capacity, int min_after_dequeue, int64_t seed,
                                         int64_t seed2, const char *name);
/* QueueEnqueueV2 / QueueEnqueueManyV2: returns the op. */
VG_API vg_op *vg_queue_enqueue(vg_graph *g, vg_output queue, const vg_output *components, int n, const char *name);
VG_API vg_op *vg_queue_enqueue_many(vg_graph *g, vg_output queue, const vg_output *components, int n, const char *name);
/* QueueDequeueV2 / ManyV2 / UpToV2: returns the op; output i is component i. n is an
 * int32 scalar (a Const gives a known batch dimension). DequeueMany waits for n
 * elements (n may exceed the capacity); DequeueUpTo returns fewer only once the queue
 * is closed. */
VG_API vg_op *vg_queue_dequeue(vg_graph *g, vg_output queue, const char *name);
VG_API vg_op *vg_queue_dequeue_many(vg_graph *g, vg_output queue, vg_output n, const char *name);
VG_API vg_op *vg_queue_dequeue_up_to(vg_graph *g, vg_output queue, vg_output n, const char *name);
/* QueueCloseV2(cancel_pending_enqueues). */
VG_API vg_op *vg_queue_close(vg_graph *g, vg_output queue, bool cancel_pending_enqueues, const char *name);
/* QueueSizeV2: int32 scalar. */
VG_API vg_output vg_queue_size(vg_graph *g, vg_output queue, const char *name);

/* IdxRecord(indices): reads MNIST-format IDX files (gzip'd or plain; loaded once per
 * session, on the first run) and gives, for an int32/int64 index tensor of shape S,
 * output 0 = images uint8 S+[rows, cols] and output 1 = labels int64 S. rows and cols
 * are known at build time when the image file's header can be read then. Run-time
 * errors: a missing file gives NOT_FOUND with the path, bad magic, truncation or a
 * record-count mismatch DATA_LOSS, an index out of range INVALID_ARGUMENT. Returns the
 * op. */
VG_API vg_op *vg_idx_record(vg_graph *g, const char *images_path, const char *labels_path, vg_output indices,
                            const char *name);

#ifdef __cplusplus
}
#endif
#endif
