/*
 * distributed.h - data-parallel training on MPI (issue 15): the process world, the
 * collective graph ops, Horovod's DistributedOptimizer and BroadcastGlobalVariablesHook,
 * and TF1's distributed API (ClusterSpec, Server, SyncReplicasOptimizer) mapped onto them.
 *
 * The world. vg_dist_init() joins the MPI job when the process was started by mpirun
 * or mpiexec (Open MPI's OMPI_COMM_WORLD_SIZE, PMI/PMIx variables) and vigil was built
 * with MPI (CMake option VIGIL_MPI, on when FindMPI finds an MPI); otherwise the
 * process is a world of one rank and every collective is the identity. All MPI calls
 * happen on one communication thread owned by vigil (MPI_THREAD_SERIALIZED), so a
 * graph op that waits on a collective never holds an MPI lock.
 *
 *     if (vg_dist_init(&st) != VG_OK) return st.code;
 *     int rank = vg_dist_rank(), size = vg_dist_size();  // 0 and 1 without mpirun
 *     printf("rank %d of %d\n", rank, size);
 *     vg_dist_finalize(&st);                             // before the process exits
 *
 * A job launched by mpirun must call vg_dist_finalize before it exits, or mpirun
 * reports the rank as failed.
 */
#ifndef VIGIL_DISTRIBUTED_H
#define VIGIL_DISTRIBUTED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"
#include "tensor.h"
#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vg_optimizer vg_optimizer;                 /* vigil/optimizer.h */
typedef struct vg_monitored_session vg_monitored_session; /* vigil/monitored.h */
struct vg_hook;                                           /* vigil/monitored.h */
struct vg_mts_options;                                    /* vigil/monitored.h */

/* ---- the world ------------------------------------------------------------ */

/* True when this build of vigil has MPI (VIGIL_MPI). */
VG_API bool vg_dist_mpi_built(void);
/* Joins the world: MPI_Init_thread under mpirun (MPI environment variables present),
 * a 1-rank world otherwise. Idempotent and thread-safe; the first call decides.
 * Fails with UNIMPLEMENTED when the process was started by mpirun but vigil was built
 * without MPI (the message names the VIGIL_MPI build option), UNAVAILABLE when MPI
 * fails to start, INVALID_ARGUMENT for a malformed VIGIL_COLLECTIVE_TIMEOUT_MS,
 * RESOURCE_EXHAUSTED. After vg_dist_finalize it fails with
 * FAILED_PRECONDITION (MPI cannot be initialised twice). */
VG_API vg_code vg_dist_init(vg_status *st);
/* True between a successful vg_dist_init and vg_dist_finalize. */
VG_API bool vg_dist_initialized(void);
/* This process's rank in [0, size); 0 before init. */
VG_API int vg_dist_rank(void);
/* Number of ranks; 1 before init and without mpirun. */
VG_API int vg_dist_size(void);
/* Rank among the processes on this host (MPI_COMM_TYPE_SHARED), and their number. */
VG_API int vg_dist_local_rank(void);
VG_API int vg_dist_local_size(void);
/* Waits for every rank. FAILED_PRECONDITION before init; UNAVAILABLE when a peer is
 * gone or MPI fails. */
VG_API vg_code vg_dist_barrier(vg_status *st);
/* The collective timeout (issue 33): a collective (and vg_dist_finalize's final
 * barrier when heartbeats are off, see below) that makes no progress for this long fails
 * with DEADLINE_EXCEEDED naming
 * the peer this rank waits on (its left neighbour in the ring, rank - 1, and that
 * rank's host from MPI_Get_processor_name), and the world is marked broken: every later
 * collective fails with UNAVAILABLE, and vg_dist_finalize leaves MPI unfinalized, so the
 * process should exit non-zero (mpirun then ends the job). Across hosts this is what
 * ends a job whose peer's link was cut: TCP alone would wait for many minutes. ms = 0:
 * no timeout. The default, VG_DIST_COLLECTIVE_TIMEOUT_MS_DEFAULT (5 minutes), leaves
 * room for a chief that checkpoints or evaluates while the others wait in a
 * collective. The environment variable VIGIL_COLLECTIVE_TIMEOUT_MS sets it at
 * vg_dist_init unless this setter was called first. May be called at any time (a
 * collective already waiting keeps the value it started with). INVALID_ARGUMENT for
 * ms < 0. */
#define VG_DIST_COLLECTIVE_TIMEOUT_MS_DEFAULT 300000
VG_API vg_code vg_dist_set_collective_timeout_ms(int64_t ms, vg_status *st);
/* The collective timeout in milliseconds (0: none). */
VG_API int64_t vg_dist_collective_timeout_ms(void);
/* Heartbeats (issue 33): every rank's small thread sends a UDP datagram to its peers
 * (all of them in worlds up to 256 ranks, else its ring neighbours) every tenth of the
 * heartbeat timeout (at most 1 s), outside MPI, to every IPv4 address of their hosts
 * exchanged at vg_dist_init. A rank waiting on its peers (a collective, entering one,
 * the final barrier) fails with UNAVAILABLE naming the peer and its host once a peer
 * has been silent for the heartbeat timeout: its process or host is gone or the link
 * to it is cut. That ends a job with a dead host or a cut link within about that time
 * instead of the collective timeout. In the final barrier of vg_dist_finalize, while
 * heartbeats run, the collective timeout does not apply: a peer that still beats is
 * finishing its own work (the chief's final checkpoint or evaluation) and the others
 * wait for it however long it takes. Heartbeats run only where every rank could open a
 * UDP socket (otherwise the collective timeout alone bounds the waits), and need the
 * hosts to reach each other over UDP on some IPv4 address (a firewall that drops it
 * makes every peer look gone: turn them off with 0).
 * Set before vg_dist_init (FAILED_PRECONDITION afterwards; INVALID_ARGUMENT for ms < 0);
 * the environment variable VIGIL_HEARTBEAT_TIMEOUT_MS sets it at vg_dist_init unless
 * this setter was called. ms = 0: no heartbeats. */
#define VG_DIST_HEARTBEAT_TIMEOUT_MS_DEFAULT 20000
VG_API vg_code vg_dist_set_heartbeat_timeout_ms(int64_t ms, vg_status *st);
/* Whether heartbeats run (after vg_dist_init in a world of several ranks). */
VG_API bool vg_dist_heartbeats_on(void);
/* Whether the world is broken: a collective failed because a peer is gone, silent or
 * too slow (UNAVAILABLE, DEADLINE_EXCEEDED), after which every collective fails with
 * UNAVAILABLE until the process exits. MPI cannot take a rank back, so a monitored
 * session does not treat such an UNAVAILABLE as a preemption to recover from (TF would
 * recreate its session and wait for the parameter server to return): it ends. */
VG_API bool vg_dist_world_broken(void);
/* Stops the communication thread and finalises MPI (if vg_dist_init started it).
 * Collectives still waiting fail with CANCELLED. Safe to call when not initialised.
 * Every rank first meets the others in a barrier polled with sleeps (up to 1 ms), so a
 * rank that finalizes while a peer still works waits there without spinning; a peer
 * that died meanwhile (seen on one node) gives UNAVAILABLE, MPI left unfinalized.
 * When a collective is still inside MPI after 10 s (its peers never came: a rank
 * failed), returns UNAVAILABLE without finalising MPI, so that the caller can exit
 * (mpirun then ends the job) instead of hanging. */
VG_API vg_code vg_dist_finalize(vg_status *st);

/* Host-memory collectives (the same communication thread as the graph ops); they
 * block until done. The reduction of a buffer of `count` elements of dtype dt
 * (VG_FLOAT, VG_DOUBLE, VG_INT32, VG_INT64), in place, on every rank.
 * Fails with FAILED_PRECONDITION before init, INVALID_ARGUMENT (dtype, count < 0,
 * NULL buffer with count > 0), UNAVAILABLE (a peer is gone). */
typedef enum vg_reduce_op { VG_REDUCE_SUM = 0, VG_REDUCE_PROD, VG_REDUCE_MIN, VG_REDUCE_MAX } vg_reduce_op;
VG_API vg_code vg_dist_allreduce(void *buf, int64_t count, vg_dtype dt, vg_reduce_op op, vg_status *st);
/* Copies `bytes` bytes of root's buffer into every rank's buffer. INVALID_ARGUMENT
 * for a root outside [0, size). */
VG_API vg_code vg_dist_broadcast(void *buf, int64_t bytes, int root, vg_status *st);

/* Point-to-point messages between two ranks (dist layer; SyncReplicasOptimizer's
 * protocol, vg_sync_replicas_optimizer_new). Tags are in [0, VG_DIST_MAX_TAG]; messages
 * from one rank with one tag arrive in the order sent. They run on the same
 * communication thread as the collectives.
 * vg_dist_send copies bytes and returns: the message is delivered in the background
 * (MPI_Isend), so a sender never waits for a receiver that is busy elsewhere.
 * vg_dist_recv takes the next message with tag from source (VG_DIST_ANY_SOURCE: from
 * any rank, MPI_ANY_SOURCE). wait = false: returns VG_OK with *out NULL and *from -1
 * when none has arrived; wait = true: waits for one, at most the collective timeout,
 * then fails with DEADLINE_EXCEEDED naming the rank waited on (and the world is broken
 * as for a collective). On success *out (owned by the caller, vg_free), *bytes and
 * *from (the sender) are set (each may be NULL but out).
 * vg_dist_flush_sends waits until every message this rank sent was received
 * (DEADLINE_EXCEEDED naming a receiver after the collective timeout): call it before
 * vg_dist_finalize when the peers may still be receiving.
 * They fail with FAILED_PRECONDITION (before init; a world of one rank has no peer),
 * INVALID_ARGUMENT (a tag outside the range, a peer outside the world or this rank
 * itself, a negative size or over 2^31 - 1 bytes, NULL buffers), UNAVAILABLE (MPI
 * failed, or the world is broken by an earlier failure), RESOURCE_EXHAUSTED. */
#define VG_DIST_ANY_SOURCE (-1)
#define VG_DIST_MAX_TAG 999
VG_API vg_code vg_dist_send(const void *buf, int64_t bytes, int dest, int tag, vg_status *st);
VG_API vg_code vg_dist_recv(int source, int tag, bool wait, void **out, int64_t *bytes, int *from, vg_status *st);
VG_API vg_code vg_dist_flush_sends(vg_status *st);

/* ---- collective graph ops (kernel layer) --------------------------------------
 * TF's collective ops over the world: group_size must be the world's size (0 = the
 * world's size, whatever it is), group_key and instance_key are kept as attrs. The
 * dtypes are float32, float64, int32, int64 (INVALID_ARGUMENT at build time for
 * others). At run time the kernels join the world (vg_dist_init) and fail with
 * INVALID_ARGUMENT (group_size not the world's, shapes that differ across ranks where
 * they must agree, naming the tensor), UNAVAILABLE (a peer is gone), CANCELLED (the
 * session closed while waiting, or the world was finalized). Every rank must run its
 * collectives in the same order: order collectives that data flow leaves unordered
 * with control dependencies. On failure the builders return {NULL, 0} (or NULL) and
 * record the error in the graph. */

/* CollectiveReduce: merge_op "Add" (NULL), "Mul", "Min", "Max"; final_op "Id" (NULL)
 * or "Div" (divide by the group size: the mean with "Add"). */
VG_API vg_output vg_collective_reduce(vg_graph *g, vg_output x, int group_size, int group_key, int instance_key,
                                      const char *merge_op, const char *final_op, const char *name);
/* CollectiveBcastSend / CollectiveBcastRecv: exactly one rank runs the send; the
 * others run a recv of the same dtype and fully defined shape. Both output the value. */
VG_API vg_output vg_collective_bcast_send(vg_graph *g, vg_output x, int group_size, int group_key,
                                          int instance_key, const char *name);
VG_API vg_output vg_collective_bcast_recv(vg_graph *g, vg_dtype dt, vg_shape shape, int group_size, int group_key,
                                          int instance_key, const char *name);
/* CollectiveGather: the ranks' inputs concatenated along dimension 0 in rank order
 * (dimension 0 may differ across ranks, the others must agree). */
VG_API vg_output vg_collective_gather(vg_graph *g, vg_output x, int group_size, int group_key, int instance_key,
                                      const char *name);
/* Horovod's broadcast (op HorovodBroadcast): every rank runs the same op; the output is
 * root_rank's value of x. The shapes must agree on every rank: INVALID_ARGUMENT naming
 * tensor_name (NULL: the op's name) otherwise. */
VG_API vg_output vg_dist_broadcast_tensor(vg_graph *g, vg_output x, int root_rank, const char *tensor_name,
                                          const char *name);
/* VigilFusedAllreduce: the sum (average = true: the mean) over ranks of n tensors of
 * one dtype, copied into one reusable fusion buffer and reduced by a single
 * MPI_Allreduce. Output i is input i's reduction. Returns the op (borrowed). Optional
 * attrs (set by vg_dist_allreduce_gradients from its options): "compression" (string
 * "none" or "fp16") and "hierarchical" (bool). */
VG_API vg_op *vg_dist_fused_allreduce(vg_graph *g, const vg_output *xs, int n, bool average, const char *name);

/* ---- Horovod's DistributedOptimizer (train layer) ---------------------------------- */

/* Gradient compression on the wire (Horovod's hvd.Compression). */
typedef enum vg_dist_compression {
    VG_DIST_COMPRESSION_NONE = 0, /* the gradients' own dtype */
    /* Compression.fp16: float32 gradients cross the network as IEEE half (half the
     * bytes); every partial sum is added in float32 and the result is float32. Values
     * carry half's precision (11 significant bits) and range (|x| > 65504 becomes inf).
     * Applies to the ring (ranks on several hosts, or VIGIL_SHM=0); the shared window
     * inside one host ignores it (memory is not the bottleneck there). float64
     * gradients are sent as they are. */
    VG_DIST_COMPRESSION_FP16 = 1
} vg_dist_compression;

/* Options of hvd.DistributedOptimizer. A zero-initialised struct (or NULL) is
 * Horovod's defaults (docs/conventions.md, "Option structs"): fused buckets of 64 MB,
 * the mean over ranks, IndexedSlices allgathered, no compression, flat allreduce. */
typedef struct vg_dist_options {
    /* Gradients are fused into buckets of at most this many bytes; each bucket is one
     * allreduce that starts as soon as its gradients exist. 0: Horovod's
     * HOROVOD_FUSION_THRESHOLD, read from the environment when set (bytes, a
     * non-negative integer; 0 there turns fusion off as in Horovod; another value is
     * ignored with a warning), else 64 MB. < 0: INVALID_ARGUMENT. */
    int64_t fusion_threshold_bytes;
    bool no_fusion; /* true: one allreduce per gradient (a threshold of 0 bytes) */
    bool sum;       /* true: the sum over ranks (Horovod's op=Sum, average=False);
                       false (default): the mean (op=Average) */
    /* Horovod's sparse_as_dense. false (default): a Gather's gradient (vigil's
     * IndexedSlices, UnsortedSegmentSum(values, indices, rows)) is allgathered (values
     * and indices, any number of rows per rank) and stays sparse, so the optimizer's
     * sparse apply updates the union of the ranks' rows; true: it is reduced densely
     * with the other gradients. */
    bool sparse_as_dense;
    vg_dist_compression compression; /* NONE (default) or FP16, see above */
    /* Horovod's HOROVOD_HIERARCHICAL_ALLREDUCE: on hosts that hold several ranks, sum
     * inside each host (MPI_Reduce on the host's ranks), ring across one leader rank per
     * host, then broadcast inside the host, so the network carries the buffer once per
     * host instead of once per rank. The environment variable VIGIL_HIERARCHICAL=1 (or
     * HOROVOD_HIERARCHICAL_ALLREDUCE=1) turns it on for every fused allreduce. With one
     * host, or one rank per host, the flat paths run. */
    bool hierarchical;
} vg_dist_options;

/* out[i] = the average (or sum) over ranks of grads[i]; {NULL, 0} stays {NULL, 0}.
 * grads may alias out. Buckets are built in reverse order (back-propagation's) and
 * chained so that every rank reduces them in the same order. A sparse gradient (see
 * sparse_as_dense) becomes two CollectiveGather ops in that chain and an
 * UnsortedSegmentSum of the gathered rows; it joins the world (vg_dist_init) at build
 * time, as the mean's divisor is the world's size. opts NULL = defaults.
 * Fails with INVALID_ARGUMENT (NULL arrays, a negative threshold, an unknown
 * compression), vg_dist_init's errors, the graph's error. */
VG_API vg_code vg_dist_allreduce_gradients(vg_graph *g, const vg_output *grads, int n, const vg_dist_options *opts,
                                           vg_output *out, vg_status *st);
/* hvd.DistributedOptimizer(opt).compute_gradients: vg_optimizer_compute_gradients, then
 * vg_dist_allreduce_gradients. Same arguments and errors as those two. */
VG_API vg_code vg_dist_compute_gradients(vg_optimizer *opt, vg_graph *g, vg_output loss, const vg_output *var_list,
                                         int nvars, const vg_dist_options *o, vg_output *grads_out, vg_status *st);
/* hvd.DistributedOptimizer(opt).minimize: the train op (borrowed), NULL with the graph's
 * error recorded (vg_optimizer_minimize's errors). */
VG_API vg_op *vg_dist_minimize(vg_optimizer *opt, vg_graph *g, vg_output loss, const vg_output *var_list,
                               int nvars, vg_output global_step, const vg_dist_options *o, const char *name);

/* Plain optimizers in a world of more than one rank (issue 28): once vg_dist_init has
 * joined a world of N > 1 ranks, vg_optimizer_compute_gradients (and so
 * vg_optimizer_minimize) averages the gradients over the ranks exactly as
 * vg_dist_compute_gradients with the default options does (vg_dist_* calls reduce with
 * their own options and never twice). A gradient built with vg_gradients, or a train
 * op built before vg_dist_init, is not averaged: vg_distributed_training_session_new
 * refuses such a graph (see there). To train each rank's model on its own, build the
 * update from vg_gradients and vg_optimizer_apply_gradients and run it in an ordinary
 * session. */

/* hvd.broadcast_variables(variables, root_rank) (train layer): an op that, run by every
 * rank at the same step, assigns each of vars[0..n) (ref outputs of VariableV2 ops)
 * root_rank's value: one HorovodBroadcast per variable, chained so that every rank
 * broadcasts in the same order, each assigned back (validate_shape), grouped by a NoOp
 * "<name>/group" (name NULL: "broadcast_variables"). Run it on its own (not in the same
 * run as other collectives, whose order against it data flow leaves open). At run time
 * it fails as vg_dist_broadcast_tensor does (INVALID_ARGUMENT naming a variable whose
 * shape differs across ranks, UNAVAILABLE). Returns the NoOp (borrowed), NULL with the
 * graph's error recorded: INVALID_ARGUMENT (root_rank < 0, or not below the world's
 * size once vg_dist_init ran; a NULL list with n > 0; an item that is not a variable),
 * RESOURCE_EXHAUSTED. Use it for a value that one rank wrote alone (TF1's ps-held
 * counter that only the chief assigns): see docs/distributed.md. */
VG_API vg_op *vg_dist_broadcast_variables(vg_graph *g, const vg_output *vars, int n, int root_rank,
                                          const char *name);
/* hvd.broadcast_global_variables(root_rank): vg_dist_broadcast_variables over the
 * global variables that exist now (the VG_GLOBAL_VARIABLES collection; name NULL:
 * "broadcast_global_variables"). The same op the broadcast hook runs after each session
 * creation, for a program to run at any step (every rank, the same step):
 *
 *     vg_op *sync = vg_dist_broadcast_global_variables(g, 0, NULL);
 *     ...
 *     vg_session_run_targets(sess, &sync, 1, &st);   // or a monitored session's run
 */
VG_API vg_op *vg_dist_broadcast_global_variables(vg_graph *g, int root_rank, const char *name);

/* Input sharding for queue pipelines (train layer): x[index::num_shards] along
 * dimension 0, e.g. this rank's files for vg_string_input_producer (tf.data has
 * vg_dataset_shard). num_shards 0 = the world's size, index -1 = this rank. Joins the
 * world. {NULL, 0} with the graph's error: INVALID_ARGUMENT (index outside
 * [0, num_shards)), vg_dist_init's errors. */
VG_API vg_output vg_dist_shard(vg_graph *g, vg_output x, int num_shards, int index, const char *name);
/* A per-rank seed: base + 7919 * rank (never 0 unless base is 0: "no seed"). */
VG_API int64_t vg_dist_seed(int64_t base);

/* ---- hooks and TF's SyncReplicasOptimizer (monitored layer) ------------------------ */

/* hvd.BroadcastGlobalVariablesHook(root_rank): after every session creation (the first
 * and each recovery) every global variable takes root_rank's value. Joins the world in
 * begin(). Errors in begin: INVALID_ARGUMENT (root outside the world); at session
 * creation: INVALID_ARGUMENT naming the variable whose shape differs across ranks,
 * UNAVAILABLE. *out is owned by the monitored session it is given to. */
VG_API vg_code vg_broadcast_global_variables_hook(int root_rank, struct vg_hook *out, vg_status *st);

/* tf.train.SyncReplicasOptimizer(opt, replicas_to_aggregate, total_num_replicas):
 * synchronous aggregation over the MPI world by allreduce (each step applies the mean
 * of every rank's gradients once). Joins the world; replicas_to_aggregate and
 * total_num_replicas (<= 0: = replicas_to_aggregate) must equal the world's size:
 * INVALID_ARGUMENT otherwise, naming the cause (a world of another size: start one rank
 * per replica; total > replicas_to_aggregate: backup replicas, which
 * vg_sync_replicas_optimizer_new below runs over point-to-point messages;
 * replicas_to_aggregate > total: several batches per replica and update, not
 * supported; replicas_to_aggregate <= 0). opt is borrowed.
 * NULL on failure. Free with vg_sync_replicas_free. */
typedef struct vg_sync_replicas vg_sync_replicas;
VG_API vg_sync_replicas *vg_sync_replicas_new(vg_optimizer *opt, int replicas_to_aggregate, int total_num_replicas,
                                              vg_status *st);
VG_API void vg_sync_replicas_free(vg_sync_replicas *s);
/* minimize over the trainable variables (NULL with the graph's error recorded). */
VG_API vg_op *vg_sync_replicas_minimize(vg_sync_replicas *s, vg_graph *g, vg_output loss, vg_output global_step,
                                        const char *name);
/* make_session_run_hook(is_chief): the hook that starts every rank from the chief's
 * (rank 0's) variables, after each session creation. INVALID_ARGUMENT for NULL. */
VG_API vg_code vg_sync_replicas_make_session_run_hook(vg_sync_replicas *s, bool is_chief, struct vg_hook *out,
                                                      vg_status *st);

/* ---- SyncReplicasOptimizer with backup workers (train layer; the hook: monitored) ----
 * tf.train.SyncReplicasOptimizer(opt, replicas_to_aggregate, total_num_replicas) as TF
 * runs it, over MPI point-to-point messages: rank 0 (the chief) holds the
 * accumulators. Each step every rank computes its own gradient at its global step; the
 * chief averages its own and the first replicas_to_aggregate - 1 workers' gradients of
 * the current global step that arrive (MPI_ANY_SOURCE), drops a gradient of an older
 * step (TF's ConditionalAccumulator: "stale"), and sends the mean to every worker;
 * every worker blocks until that update (TF's token) and every rank applies it with opt,
 * so variables, slots and the global step (once per update) stay identical on all
 * ranks. With replicas_to_aggregate R < N ranks the N - R slowest are backup workers:
 * which R gradients make an update may vary between runs, as in TF. A worker that is
 * behind applies one waiting update per run (its gradients of an older step are
 * dropped), as TF's worker takes one token per step. Waits are bounded by the collective timeout
 * (vg_dist_set_collective_timeout_ms): the run fails with DEADLINE_EXCEEDED naming the
 * ranks waited on (the chief: the workers that sent nothing; a worker: rank 0). See
 * docs/distributed.md.
 *
 * _new joins the world. total_num_replicas <= 0 means replicas_to_aggregate (TF's
 * None) and must equal the world's size (each worker is one rank); 1 <= R <= N.
 * INVALID_ARGUMENT names the cause otherwise (R > N: TF lets a worker push several
 * gradients per update; vigil refuses). opt is borrowed and must outlive this object.
 * NULL on failure. Free with vg_sync_replicas_optimizer_free (after the session that
 * runs its ops is closed; a run after that fails with FAILED_PRECONDITION). */
typedef struct vg_sync_replicas_optimizer vg_sync_replicas_optimizer;
VG_API vg_sync_replicas_optimizer *vg_sync_replicas_optimizer_new(vg_optimizer *opt, int replicas_to_aggregate,
                                                                  int total_num_replicas, vg_status *st);
VG_API void vg_sync_replicas_optimizer_free(vg_sync_replicas_optimizer *s);
/* total_num_replicas and replicas_to_aggregate as resolved by _new (0 for NULL). */
VG_API int vg_sync_replicas_optimizer_total_num_replicas(const vg_sync_replicas_optimizer *s);
VG_API int vg_sync_replicas_optimizer_replicas_to_aggregate(const vg_sync_replicas_optimizer *s);
/* True once apply_gradients (or minimize) built the update (TF's _gradients_applied). */
VG_API bool vg_sync_replicas_optimizer_applied(const vg_sync_replicas_optimizer *s);
/* apply_gradients(grads_and_vars, global_step): the op VigilSyncReplicasAggregate
 * "<name>/aggregate" (inputs: the global step, the gradients; outputs: the means), then
 * opt's apply_gradients of the means (pairs with grads[i].op NULL skipped). The train op
 * (borrowed), NULL with the graph's error recorded: INVALID_ARGUMENT (no global step:
 * "Global step is required to check staleness"; a gradient not float32/float64; no
 * gradients), opt's errors. Every rank must build the same graph. name NULL:
 * "sync_replicas". */
VG_API vg_op *vg_sync_replicas_optimizer_apply_gradients(vg_sync_replicas_optimizer *s, vg_graph *g,
                                                         const vg_output *grads, const vg_output *vars, int n,
                                                         vg_output global_step, const char *name);
/* TF's variable_averages / variables_to_average: after each update, ema.apply(vars)
 * (vars NULL, n 0: the trainable variables), as TF's chief runs it after the update;
 * here every rank runs it, so the shadows stay identical. The train op is then the
 * EMA's NoOp, run after the update. Call before apply_gradients / minimize
 * (FAILED_PRECONDITION after); ema is borrowed (vigil/train_lib.h, vg_ema_new), vars
 * copied. INVALID_ARGUMENT for NULL s or ema, n < 0, NULL vars with n > 0. */
typedef struct vg_ema vg_ema; /* vigil/train_lib.h */
VG_API vg_code vg_sync_replicas_optimizer_set_variable_averages(vg_sync_replicas_optimizer *s, vg_ema *ema,
                                                                const vg_output *vars, int n, vg_status *st);
/* minimize over the trainable variables: this rank's gradients (vg_gradients, never
 * averaged by a collective) and apply_gradients. NULL with the graph's error recorded
 * (INVALID_ARGUMENT "No variables to optimize.", vg_gradients' and apply_gradients'
 * errors). At run time the train op fails with DEADLINE_EXCEEDED / UNAVAILABLE as
 * above, FAILED_PRECONDITION (fewer than R ranks still train; after _finish or _free),
 * OUT_OF_RANGE (a worker whose chief has finished), INTERNAL (ranks whose gradients do
 * not match: different graphs). A waiting step is not cancelled by closing the session:
 * the collective timeout bounds it. */
VG_API vg_op *vg_sync_replicas_optimizer_minimize(vg_sync_replicas_optimizer *s, vg_graph *g, vg_output loss,
                                                  vg_output global_step, const char *name);
/* What this rank has seen: updates applied, gradients in them, gradients the chief
 * dropped (stale, or surplus once R were in; 0 on workers), and the last update's step
 * and contributing ranks (the first VG_SYNC_REPLICAS_MAX_RANKS). Fills *out;
 * INVALID_ARGUMENT for NULL. */
#define VG_SYNC_REPLICAS_MAX_RANKS 64
typedef struct vg_sync_replicas_stats {
    int64_t updates, gradients_applied, stale_dropped;
    int64_t last_step; /* the global step the last update's gradients were computed at; -1: none */
    int num_last_ranks;
    int last_ranks[VG_SYNC_REPLICAS_MAX_RANKS];
} vg_sync_replicas_stats;
VG_API vg_code vg_sync_replicas_optimizer_stats(const vg_sync_replicas_optimizer *s, vg_sync_replicas_stats *out,
                                                vg_status *st);
/* Ends this rank's part (the hook's end() calls it): a worker tells the chief it is done
 * and takes the updates still sent to it until the chief's reply; the chief takes the
 * messages still coming until every worker is done. Then waits until everything this
 * rank sent was received, so vg_dist_finalize finds no message in flight. Every rank
 * must call it once after its last step (again: no-op). DEADLINE_EXCEEDED naming the
 * rank(s) waited on after the collective timeout; UNAVAILABLE. */
VG_API vg_code vg_sync_replicas_optimizer_finish(vg_sync_replicas_optimizer *s, vg_status *st);
/* make_session_run_hook(is_chief, num_tokens) (monitored layer): begin() fails with
 * FAILED_PRECONDITION when apply_gradients / minimize was not called yet (TF's
 * ValueError); after each session creation every rank takes the chief's variables (a
 * broadcast, as TF's workers wait on the chief's init); end() calls _finish. num_tokens:
 * -1 (TF's default) or >= 0; every worker waits for the update after each gradient
 * (TF with num_tokens = 0), so the initial tokens TF would queue are not used.
 * INVALID_ARGUMENT for NULL, num_tokens < -1, or is_chief != (rank == 0). */
VG_API vg_code vg_sync_replicas_optimizer_make_session_run_hook(vg_sync_replicas_optimizer *s, bool is_chief,
                                                                int num_tokens, struct vg_hook *out, vg_status *st);

/* ---- TF1's ClusterSpec / Server / replica_device_setter (monitored layer) ------------
 * A ps/worker program becomes synchronous data-parallel training: each "worker" task
 * is one MPI rank (task_index == rank), worker 0 is the chief; variables are
 * replicated on every rank instead of living on ps tasks, and a ps task's Server.join()
 * returns at once. See docs/distributed.md for what changes. */
typedef struct vg_cluster_spec vg_cluster_spec;
/* An empty ClusterSpec; NULL on allocation failure. */
VG_API vg_cluster_spec *vg_cluster_spec_new(void);
VG_API void vg_cluster_spec_free(vg_cluster_spec *cs);
/* Adds job `name` with n "host:port" strings (copied). INVALID_ARGUMENT for a job given
 * twice, a NULL name or host; RESOURCE_EXHAUSTED. */
VG_API vg_code vg_cluster_spec_add_job(vg_cluster_spec *cs, const char *name, const char *const *hosts, int n,
                                       vg_status *st);
/* The same from a comma-separated list ("h1:2222,h2:2222"), as TF1 flags give them. */
VG_API vg_code vg_cluster_spec_parse_job(vg_cluster_spec *cs, const char *name, const char *comma_hosts,
                                         vg_status *st);
/* Tasks of a job; -1 when the job is not in the spec. */
VG_API int vg_cluster_spec_num_tasks(const vg_cluster_spec *cs, const char *name);

/* tf.train.Server(cluster, job_name, task_index). A worker joins the MPI world and
 * must run on rank task_index of a world with one rank per worker task:
 * INVALID_ARGUMENT otherwise (and for a job or task not in the spec). Free with
 * vg_server_free. */
typedef struct vg_server vg_server;
VG_API vg_server *vg_server_new(const vg_cluster_spec *cs, const char *job_name, int task_index, vg_status *st);
/* server.target: "mpi://worker/<task>" (borrowed), for MonitoredTrainingSession's master. */
VG_API const char *vg_server_target(const vg_server *s);
/* server.join(): returns VG_OK at once (a ps task serves nothing). */
VG_API vg_code vg_server_join(vg_server *s, vg_status *st);
VG_API void vg_server_free(vg_server *s);
/* tf.train.replica_device_setter(worker_device, cluster): variables stay replicated on
 * every rank, so the device is the worker's, with its "/job:", "/replica:" and "/task:"
 * parts dropped (they name this process, one CPU): "/job:worker/task:1" gives "",
 * "/job:worker/task:1/cpu:0" gives "/cpu:0", strings vg_config_check_placement accepts
 * without soft placement. Returns a pointer into worker_device (borrowed; "" for NULL). */
VG_API const char *vg_replica_device_setter(const vg_cluster_spec *cs, const char *worker_device);
/* tf.train.MonitoredTrainingSession(master, is_chief, ...) of a worker: is_chief must
 * be true exactly on rank 0 (INVALID_ARGUMENT otherwise). Adds the broadcast hook (rank
 * 0's variables, after every session creation). The chief restores, saves checkpoints
 * and summaries and runs the chief-only hooks; the others initialise locally, wait in
 * the broadcast for the chief's values (TF's WorkerSessionCreator waits on the ready
 * op), and write nothing. On more than one rank it refuses a graph whose optimizer
 * updates (Apply* ops) take a value that passed through no collective (a train op built
 * with a plain optimizer before vg_dist_init, or from vg_gradients): each rank would
 * train its own model. Owns o's hooks, also on failure. Errors:
 * vg_monitored_training_session_new's, INVALID_ARGUMENT, FAILED_PRECONDITION (that
 * refusal, naming the op, the variable and the fixes). */
VG_API vg_monitored_session *vg_distributed_training_session_new(vg_graph *g, const char *master,
                                                                 const struct vg_mts_options *o, vg_status *st);

#ifdef __cplusplus
}
#endif
#endif
