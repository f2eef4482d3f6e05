/*
 * queue_internal.h - what other kernel families may use of queue_ops.c's queues: the
 * reader ops take their work items (file names) from a string queue.
 */
#ifndef VG_QUEUE_INTERNAL_H
#define VG_QUEUE_INTERNAL_H

#include "core/core.h"
#include "vigil/tensor.h"

/* Dequeues one element from the queue behind `handle` (a queue op's resource output),
 * which must have a single string scalar component. *out gets a new reference to the
 * element. Blocks like QueueDequeueV2 until an element arrives, the queue is closed
 * and empty (OUT_OF_RANGE, TF's message), the session closes (CANCELLED) or deadline
 * (vg__now_ns clock; 0 = none) passes (DEADLINE_EXCEEDED). INVALID_ARGUMENT for a
 * handle that is not such a queue. */
VG_HIDDEN vg_code vg__queue_dequeue_string(const vg_tensor *handle, int64_t deadline, vg_tensor **out,
                                           vg_status *st);

#endif
