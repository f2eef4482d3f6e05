/*
 * vigil/session.h - running a graph: vg_session_run(feeds, fetches, targets).
 *
 * A session is made from a graph and holds the state of a training run: variable
 * values, queues, random-number streams. It runs only the part of the graph that the
 * fetches and targets need, caches the execution plan per (feeds, fetches, targets),
 * runs independent ops in parallel on its inter-op threads and splits large kernels
 * over its intra-op threads. vg_session_run is safe to call from several threads at
 * once.
 *
 *     vg_session *s = vg_session_new(g, NULL, &st);
 *     vg_output feeds[1] = {x};  vg_tensor *vals[1] = {batch};
 *     vg_output fetches[1] = {loss};  vg_tensor *out[1];
 *     vg_op *targets[1] = {train_op};
 *     if (vg_session_run(s, NULL, feeds, vals, 1, fetches, out, 1, targets, 1, NULL, &st))
 *         return st.code;
 *     printf("%f\n", vg_tensor_scalar(out[0]));
 *     vg_tensor_free(out[0]);
 *     vg_session_free(s);
 */
#ifndef VIGIL_SESSION_H
#define VIGIL_SESSION_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vg_session vg_session;

/* ------------------------------------------------------------------------ */
/* Options (ConfigProto's thread settings). When both are above 1 the session runs one
 * set of max(intra, inter) - 1 worker threads for both kinds of work (the calling
 * thread is the last one); idle workers spin before they sleep for up to
 * VG_POOL_SPIN_ACTIVE_US microseconds while a run is in progress (default 1000, or
 * VG_POOL_SPIN_US when only that is set) and VG_POOL_SPIN_US otherwise (default 50). */
typedef struct vg_session_options {
    int intra_op_threads; /* threads a single kernel may use; 0 = number of cores */
    int inter_op_threads; /* ops run concurrently in one step; 0 = number of cores */
} vg_session_options;


/* ------------------------------------------------------------------------ */
/* RunOptions / RunMetadata. */
typedef enum vg_trace_level {
    VG_TRACE_NONE = 0,
    VG_TRACE_SOFTWARE = 1,
    VG_TRACE_HARDWARE = 2,
    VG_TRACE_FULL = 3
} vg_trace_level;

typedef struct vg_run_options {
    vg_trace_level trace_level;
    int64_t timeout_in_ms;                 /* 0 = none; blocking ops give up with DEADLINE_EXCEEDED */
    int inter_op_thread_pool;              /* kept for TF parity; unused */
    bool output_partition_graphs;          /* fills run metadata's partition graph count */
    bool report_tensor_allocations_upon_oom;
    /* debug tensor watches (tensor names), kept for hook-merging parity. */
    int ndebug_watches;
    const char *const *debug_watches;
} vg_run_options;


/* Per-op timing recorded when trace_level == VG_TRACE_FULL (TF's NodeExecStats). */
typedef struct vg_node_stats {
    const char *node_name;    /* borrowed from the graph */
    const char *op_type;      /* borrowed from the graph */
    int64_t start_us;         /* wall clock, microseconds since the epoch */
    int64_t end_us;
    int thread_id;            /* small integer: 0 = the caller's thread */
    int64_t bytes_allocated;  /* bytes of the op's outputs */
    int64_t bytes_read;       /* bytes of the tensors the node's kernel read (its inputs,
                                 variable references left out) */
} vg_node_stats;

typedef struct vg_run_metadata vg_run_metadata;

/* New empty run metadata (free with vg_run_metadata_free); NULL on allocation failure. */
VG_API vg_run_metadata *vg_run_metadata_new(void);
VG_API void vg_run_metadata_free(vg_run_metadata *md);
/* Clears the recorded stats. */
VG_API void vg_run_metadata_clear(vg_run_metadata *md);
VG_API int vg_run_metadata_num_nodes(const vg_run_metadata *md);
/* Stats of node i, borrowed until the metadata is cleared, reused or freed. */
VG_API const vg_node_stats *vg_run_metadata_node(const vg_run_metadata *md, int i);
VG_API int vg_run_metadata_num_partition_graphs(const vg_run_metadata *md);
/* Serialized RunMetadata proto (step_stats) for event files: bytes written into a
 * new buffer from the vigil allocator that the caller frees with vg_free. */
VG_API vg_code vg_run_metadata_serialize(const vg_run_metadata *md, void **bytes, size_t *len,
                                         vg_status *st);

/* ------------------------------------------------------------------------ */
/* Session */

/* New session on graph g (borrowed: it must outlive the session; it is not modified).
 * opts may be NULL (defaults). Fails with the graph's sticky error,
 * RESOURCE_EXHAUSTED. */
VG_API vg_session *vg_session_new(vg_graph *g, const vg_session_options *opts, vg_status *st);

/* Runs one step.
 * - feeds/feed_values (nfeeds): any output of the graph may be fed; the tensors are
 *   borrowed for the call. A fed dtype or shape that does not match the output's
 *   build-time dtype/shape fails with INVALID_ARGUMENT naming the tensor.
 * - fetches/out (nfetches): on success out[i] is a new reference the caller frees;
 *   on failure every out[i] is NULL.
 * - targets (ntargets): ops run for their effect.
 * - run_options and run_metadata may be NULL.
 * Fails with: INVALID_ARGUMENT (bad feed, op from another graph, a NULL array with a
 * count > 0: out, fetches, feeds, feed_values, targets; a NULL session), NOT_FOUND,
 * FAILED_PRECONDITION (uninitialized variable, closed session), CANCELLED (session
 * closed while running), OUT_OF_RANGE (queue closed and empty), DEADLINE_EXCEEDED,
 * RESOURCE_EXHAUSTED, and any kernel's error, with the failing op's name in the
 * message. Thread-safe. */
VG_API vg_code vg_session_run(vg_session *s, const vg_run_options *run_options,
                              const vg_output *feeds, vg_tensor *const *feed_values, int nfeeds,
                              const vg_output *fetches, vg_tensor **out, int nfetches,
                              vg_op *const *targets, int ntargets,
                              vg_run_metadata *run_metadata, vg_status *st);

/* Closes the session: cancels runs blocked in queue ops (they return CANCELLED), waits
 * for runs in flight to end, and releases variables and queues. Later runs fail with
 * FAILED_PRECONDITION. Closing twice is harmless. Never fails (returns VG_OK). */
VG_API vg_code vg_session_close(vg_session *s, vg_status *st);
/* Closes (if needed) and frees. NULL is a no-op. */
VG_API void vg_session_free(vg_session *s);

VG_API vg_graph *vg_session_graph(const vg_session *s);
VG_API bool vg_session_closed(const vg_session *s);

/* Convenience: runs with a single fetch (or none when fetch.op is NULL) and no feeds.
 * *out (if out != NULL) gets a new reference. */
VG_API vg_code vg_session_run1(vg_session *s, vg_output fetch, vg_tensor **out, vg_status *st);
/* Convenience: runs the given targets with no feeds and no fetches. */
VG_API vg_code vg_session_run_targets(vg_session *s, vg_op *const *targets, int ntargets,
                                      vg_status *st);

#ifdef __cplusplus
}
#endif
#endif
