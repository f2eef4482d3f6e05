/*
 * dist_hooks.c - Horovod's BroadcastGlobalVariablesHook and TF's
 * SyncReplicasOptimizer (its session-run hook and minimize) on the MPI world
 * (issue 15), written on the public API.
 *
 * The hook builds, in begin(), vg_dist_broadcast_global_variables (one HorovodBroadcast
 * per global variable, chained with control dependencies so every rank broadcasts in
 * the same order, assigned back to the variable), and runs it in
 * after_create_session: after the session was created, i.e. after the chief
 * initialised or restored its variables, and again after every recovery. Each rank
 * blocks in the broadcast until the root arrives, which is how a non-chief waits for
 * the chief, as TF's WorkerSessionCreator waits on the ready op.
 * Variables whose shapes differ across ranks fail there with INVALID_ARGUMENT naming
 * the variable.
 */
#include "hooks_internal.h"
#include "monitored/monitored_internal.h"
#include "vigil/distributed.h"
#include "vigil/ops.h"
#include "vigil/optimizer.h"
#include <stdlib.h>

typedef struct bcast_hook {
    int root;
    vg_op *group;
} bcast_hook;

static vg_code bh_begin(void *payload, vg_graph *g, vg_status *st) {
    bcast_hook *h = payload;
    if (vg_dist_init(st) != VG_OK) return st->code;
    if (h->root < 0 || h->root >= vg_dist_size())
        return vg_status_set(st, VG_INVALID_ARGUMENT, "BroadcastGlobalVariablesHook: root_rank %d outside [0, %d)",
                             h->root, vg_dist_size());
    h->group = vg_dist_broadcast_global_variables(g, h->root, NULL); /* the program's op, run at creation */
    return vg_graph_status(g, st);
}

static vg_code bh_after_create(void *payload, vg_session *sess, vg_coord *coord, vg_status *st) {
    (void)coord;
    bcast_hook *h = payload;
    if (!h->group) return VG_OK;
    return vg_session_run_targets(sess, &h->group, 1, st);
}

vg_code vg_broadcast_global_variables_hook(int root_rank, vg_hook *out, vg_status *st) {
    if (!out) return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_broadcast_global_variables_hook: NULL out");
    bcast_hook *h = vg_calloc(1, sizeof *h);
    if (!h) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in BroadcastGlobalVariablesHook");
    h->root = root_rank;
    *out = vg__hk_make("BroadcastGlobalVariablesHook", h, vg_free);
    vg__hk_callbacks(out, bh_begin, bh_after_create, NULL, NULL, NULL);
    return VG_OK;
}

/* ---- SyncReplicasOptimizer --------------------------------------------------------- */

struct vg_sync_replicas {
    vg_optimizer *opt;
    int replicas_to_aggregate, total_num_replicas;
};

vg_sync_replicas *vg_sync_replicas_new(vg_optimizer *opt, int replicas_to_aggregate, int total_num_replicas,
                                       vg_status *st) {
    if (!opt) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "SyncReplicasOptimizer: NULL optimizer");
        return NULL;
    }
    if (vg_dist_init(st) != VG_OK) return NULL;
    /* TF (sync_replicas_optimizer.py) takes total_num_replicas = None as
     * replicas_to_aggregate, treats total > replicas_to_aggregate as backup replicas
     * and total < replicas_to_aggregate as replicas that compute several batches per
     * update, and trusts total_num_replicas to be the number of workers started (else
     * its accumulators wait forever). vigil averages exactly one gradient per MPI rank
     * per step, so all three must equal the world's size: say which one does not. */
    int size = vg_dist_size();
    if (total_num_replicas <= 0) total_num_replicas = replicas_to_aggregate;
    if (replicas_to_aggregate <= 0) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "SyncReplicasOptimizer: replicas_to_aggregate=%d must be positive",
                      replicas_to_aggregate);
        return NULL;
    }
    if (replicas_to_aggregate < total_num_replicas) {
        vg_status_set(st, VG_INVALID_ARGUMENT,
                      "SyncReplicasOptimizer: total_num_replicas=%d > replicas_to_aggregate=%d asks for %d backup "
                      "replica(s) whose gradients a step drops; vg_sync_replicas averages every rank's gradient at every "
                      "step (an allreduce): use vg_sync_replicas_optimizer_new for backup replicas, or pass "
                      "replicas_to_aggregate = total_num_replicas = the number of MPI ranks (%d here)",
                      total_num_replicas, replicas_to_aggregate, total_num_replicas - replicas_to_aggregate, size);
        return NULL;
    }
    if (replicas_to_aggregate > total_num_replicas) {
        vg_status_set(st, VG_INVALID_ARGUMENT,
                      "SyncReplicasOptimizer: replicas_to_aggregate=%d > total_num_replicas=%d asks each replica "
                      "to compute several batches per update; vigil averages one gradient per MPI rank per step: "
                      "pass replicas_to_aggregate = total_num_replicas = the number of MPI ranks (%d here) and a "
                      "larger batch per rank",
                      replicas_to_aggregate, total_num_replicas, size);
        return NULL;
    }
    if (total_num_replicas != size) {
        vg_status_set(st, VG_INVALID_ARGUMENT,
                      "SyncReplicasOptimizer: replicas_to_aggregate = total_num_replicas = %d, but the MPI world "
                      "has %d rank(s)%s; in vigil each replica is one MPI rank: start the job with mpirun -np %d, "
                      "or pass %d",
                      total_num_replicas, size,
                      size == 1 && !getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMI_SIZE") && !getenv("PMIX_RANK")
                          ? " (the process was not started by mpirun)"
                          : "",
                      total_num_replicas, size);
        return NULL;
    }
    vg_sync_replicas *s = vg__mon_calloc(sizeof *s, st, "out of memory allocating SyncReplicasOptimizer");
    if (!s) return NULL;
    s->opt = opt;
    s->replicas_to_aggregate = replicas_to_aggregate;
    s->total_num_replicas = total_num_replicas;
    return s;
}

void vg_sync_replicas_free(vg_sync_replicas *s) { vg_free(s); }

vg_op *vg_sync_replicas_minimize(vg_sync_replicas *s, vg_graph *g, vg_output loss, vg_output global_step,
                                 const char *name) {
    if (!s) {
        if (g) vg_graph_set_error(g, VG_INVALID_ARGUMENT, "vg_sync_replicas_minimize: NULL optimizer");
        return NULL;
    }
    return vg_dist_minimize(s->opt, g, loss, NULL, 0, global_step, NULL, name ? name : "sync_replicas");
}

vg_code vg_sync_replicas_make_session_run_hook(vg_sync_replicas *s, bool is_chief, vg_hook *out, vg_status *st) {
    (void)is_chief; /* every rank runs the broadcast; the chief's values win */
    if (!s || !out) return vg_status_set(st, VG_INVALID_ARGUMENT, "make_session_run_hook: NULL argument");
    return vg_broadcast_global_variables_hook(0, out, st);
}
