/*
 * comm.h - the dist layer (above core, below io): vigil's one MPI communication
 * thread and the requests other layers hand to it (collective kernels, the
 * host-memory collectives of vigil/distributed.h).
 *
 * One thread at a time makes MPI calls after MPI_Init_thread, in the order the
 * requests were submitted: the submitting thread itself when MPI is idle (in
 * vg__comm_wait), the communication thread for requests queued behind another. Ranks
 * must submit collectives in the same order (the graph builders chain collective ops
 * with control dependencies for that).
 * In a world of one rank (no mpirun, or a build without MPI) requests complete at
 * once on the submitting thread.
 */
#ifndef VG_DIST_COMM_H
#define VG_DIST_COMM_H

#include "core/core.h"
#include "vigil/distributed.h"
#include <stdint.h>

typedef enum vg__comm_kind {
    VG__COMM_ALLREDUCE, /* buf: count elements of dt, reduced in place with op */
    VG__COMM_BCAST,     /* buf: count bytes from root */
    VG__COMM_ALLGATHER, /* sendbuf: count bytes (may differ per rank); recv: filled */
    VG__COMM_BARRIER,
    VG__COMM_CHECK,     /* buf: count int64, every rank must hold the same values */
    VG__COMM_SEND,      /* point-to-point: buf (owned by the request, vg__malloc), count
                         * bytes to rank root with tag op (vg_dist_send) */
    VG__COMM_RECV,      /* point-to-point: the next message with tag op from rank root
                         * (-1: any), waiting when dt is nonzero (vg_dist_recv) */
    VG__COMM_FLUSH,     /* waits until every send of this rank was received */
    VG__COMM_FUSED      /* sum (float32/float64) of many tensors into one buffer: buf, count
                         * elements; parts: send = an input, recv = its slice of buf (in
                         * order, non-overlapping), scale: the mean. Ranks all on one
                         * node: through the MPI-3 shared window when the buffer fits a
                         * slot (comm.c); otherwise a ring on MPI point-to-point; every
                         * chunk of count / size must fit an int. */
} vg__comm_kind;

typedef struct vg__comm_req vg__comm_req;

/* One MPI_Allreduce of a request in parts: count elements from send (NULL or recv:
 * in place) into recv; scale: then recv *= 1 / size (float types: the mean). */
typedef struct vg__comm_part {
    const void *send;
    void *recv;
    int64_t count;
    bool scale;
} vg__comm_part;

/* Creates a request (one reference for the caller). The buffers stay the caller's
 * but must live until vg__comm_req_free (a cancelled wait leaves the request running
 * on the communication thread: keep the buffers of an abandoned request alive by
 * giving them to the request with vg__comm_req_own). NULL on allocation failure. */
VG_HIDDEN vg__comm_req *vg__comm_req_new(vg__comm_kind kind, void *buf, int64_t count, vg_dtype dt,
                                         vg_reduce_op op, int root);
/* The request gives p back to the buffer pool (vg__comm_buffer_put) when its last
 * reference goes. */
VG_HIDDEN void vg__comm_req_own(vg__comm_req *r, void *p);
/* The request goes to the communication thread even when MPI is idle, so that the
 * submitting thread sleeps while it waits instead of making the MPI calls (and MPI's
 * busy waits) itself: for a run with inter-op helper threads, whose caller a busy
 * wait would slow down against the helpers. */
VG_HIDDEN void vg__comm_req_queue_only(vg__comm_req *r);
/* ALLREDUCE from sendbuf into buf (not in place): MPI reads sendbuf, writes buf. */
VG_HIDDEN void vg__comm_req_set_send(vg__comm_req *r, const void *sendbuf);
/* FUSED: fp16 = float32 sent as IEEE half on the ring (Compression.fp16; the shared
 * window ignores it); hierarchical = reduce inside each node, ring across the nodes'
 * leaders, broadcast inside the node (also on for every request with the environment's
 * VIGIL_HIERARCHICAL=1 / HOROVOD_HIERARCHICAL_ALLREDUCE=1; VIGIL_TEST_NODE_SIZE=k fakes
 * nodes of k consecutive ranks). Every rank must set the same. */
VG_HIDDEN void vg__comm_req_set_wire(vg__comm_req *r, bool fp16, bool hierarchical);
/* The request keeps a reference to t (vg_tensor_ref) until its last reference goes:
 * tensors whose data it reads or writes outlive a cancelled wait. false when out of
 * memory (nothing held). */
VG_HIDDEN bool vg__comm_req_hold(vg__comm_req *r, vg_tensor *t);
/* ALLREDUCE in parts, reduced one after the other in the order added (every rank must
 * add the same parts); buf, count and the send buffer of the request are then unused.
 * false when out of memory. */
VG_HIDDEN bool vg__comm_req_add_part(vg__comm_req *r, const void *sendbuf, void *recvbuf, int64_t count, bool scale);
/* ALLGATHER results: a buffer of the concatenation (owned by the request) and each
 * rank's byte count (size entries). Valid after a successful wait. */
VG_HIDDEN const void *vg__comm_req_gathered(const vg__comm_req *r, const int64_t **counts, int64_t *total);
/* CHECK: the first index whose values differ across ranks (-1 if none). */
VG_HIDDEN int vg__comm_req_check_mismatch(const vg__comm_req *r);
/* Queues the request. FAILED_PRECONDITION before init / after finalize. */
VG_HIDDEN vg_code vg__comm_submit(vg__comm_req *r, vg_status *st);
/* Waits until done; when cancelled(arg) turns true (polled), returns CANCELLED and
 * leaves the request to finish on its own. deadline_ns (vg__now_ns clock) 0 = none:
 * DEADLINE_EXCEEDED. Returns the request's own status otherwise (UNAVAILABLE when MPI
 * failed: a peer is gone). */
VG_HIDDEN vg_code vg__comm_wait(vg__comm_req *r, bool (*cancelled)(const void *arg), const void *arg,
                                int64_t deadline_ns, vg_status *st);
/* Drops the caller's reference. */
VG_HIDDEN void vg__comm_req_free(vg__comm_req *r);
/* Submit + wait without cancellation + free (host collectives). */
VG_HIDDEN vg_code vg__comm_run(vg__comm_kind kind, void *buf, int64_t count, vg_dtype dt, vg_reduce_op op,
                               int root, vg_status *st);

/* A reusable host buffer of at least `bytes` (the fusion buffer): buffers given back
 * are kept (up to a few) and handed out again. NULL on allocation failure. */
VG_HIDDEN void *vg__comm_buffer_get(size_t bytes);
VG_HIDDEN void vg__comm_buffer_put(void *p);

#endif
