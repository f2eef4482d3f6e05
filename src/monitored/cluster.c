/*
 * cluster.c - TF1's distributed API mapped onto the MPI world (issue 15), on the
 * public API: tf.train.ClusterSpec, tf.train.Server, replica_device_setter and
 * MonitoredTrainingSession(master, is_chief).
 *
 * Each task of the "worker" job is one MPI rank (task_index == rank); the chief is
 * worker 0. A "ps" task has nothing to serve (variables are replicated on every rank
 * and kept equal by allreduce): its Server.join() returns at once, so a ps/worker
 * program runs unchanged and its ps processes, if started outside mpirun, just exit.
 */
#include "monitored/hooks/hooks_internal.h"
#include "monitored_internal.h"
#include "vigil/distributed.h"
#include "vigil/hooks.h"
#include "vigil/monitored.h"
#include <stdio.h>
#include <string.h>

typedef struct job {
    char *name;
    char **hosts;
    int n;
} job;

struct vg_cluster_spec {
    job *jobs;
    int njobs;
};

vg_cluster_spec *vg_cluster_spec_new(void) { return vg_calloc(1, sizeof(vg_cluster_spec)); }

void vg_cluster_spec_free(vg_cluster_spec *cs) {
    if (!cs) return;
    for (int i = 0; i < cs->njobs; i++) {
        for (int k = 0; k < cs->jobs[i].n; k++) vg_free(cs->jobs[i].hosts[k]);
        vg_free(cs->jobs[i].hosts);
        vg_free(cs->jobs[i].name);
    }
    vg_free(cs->jobs);
    vg_free(cs);
}

static const job *find_job(const vg_cluster_spec *cs, const char *name) {
    for (int i = 0; cs && name && i < cs->njobs; i++)
        if (strcmp(cs->jobs[i].name, name) == 0) return &cs->jobs[i];
    return NULL;
}

vg_code vg_cluster_spec_add_job(vg_cluster_spec *cs, const char *name, const char *const *hosts, int n, vg_status *st) {
    if (!cs || !name || !*name || n < 0 || (n > 0 && !hosts))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "ClusterSpec: a job needs a name and n >= 0 hosts");
    if (find_job(cs, name)) return vg_status_set(st, VG_INVALID_ARGUMENT, "ClusterSpec: job '%s' given twice", name);
    for (int i = 0; i < n; i++)
        if (!hosts[i]) return vg_status_set(st, VG_INVALID_ARGUMENT, "ClusterSpec: job '%s' host %d is NULL", name, i);
    job *nj = vg_realloc(cs->jobs, (size_t)cs->njobs * sizeof *nj, (size_t)(cs->njobs + 1) * sizeof *nj);
    if (!nj) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in ClusterSpec");
    cs->jobs = nj;
    job *j = &cs->jobs[cs->njobs];
    memset(j, 0, sizeof *j);
    j->name = vg__hk_strdup(name);
    j->hosts = vg_calloc((size_t)(n ? n : 1), sizeof(char *));
    bool ok = j->name && j->hosts;
    for (int i = 0; ok && i < n; i++) ok = (j->hosts[i] = vg__hk_strdup(hosts[i])) != NULL;
    j->n = n;
    cs->njobs++;
    if (!ok) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in ClusterSpec");
    return VG_OK;
}

vg_code vg_cluster_spec_parse_job(vg_cluster_spec *cs, const char *name, const char *comma_hosts, vg_status *st) {
    if (!comma_hosts) return vg_status_set(st, VG_INVALID_ARGUMENT, "ClusterSpec: NULL host list for job '%s'", name ? name : "");
    char *copy = vg__hk_strdup(comma_hosts);
    if (!copy) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in ClusterSpec");
    const char *hosts[256];
    int n = 0;
    for (char *save = NULL, *t = strtok_r(copy, ",", &save); t && n < 256; t = strtok_r(NULL, ",", &save)) hosts[n++] = t;
    vg_code rc = vg_cluster_spec_add_job(cs, name, hosts, n, st);
    vg_free(copy);
    return rc;
}

int vg_cluster_spec_num_tasks(const vg_cluster_spec *cs, const char *name) {
    const job *j = find_job(cs, name);
    return j ? j->n : -1;
}

struct vg_server {
    bool ps;
    int task;
    char target[64];
};

vg_server *vg_server_new(const vg_cluster_spec *cs, const char *job_name, int task_index, vg_status *st) {
    const job *j = find_job(cs, job_name);
    if (!j) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "Server: job '%s' is not in the ClusterSpec", job_name ? job_name : "(null)");
        return NULL;
    }
    if (task_index < 0 || task_index >= j->n) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "Server: task_index %d outside job '%s' of %d task(s)", task_index,
                      job_name, j->n);
        return NULL;
    }
    bool ps = strcmp(job_name, "worker") != 0 && strcmp(job_name, "chief") != 0;
    if (!ps) {
        if (vg_dist_init(st) != VG_OK) return NULL;
        if (j->n != vg_dist_size()) {
            vg_status_set(st, VG_INVALID_ARGUMENT,
                          "Server: the cluster has %d worker task(s) but the MPI world has %d rank(s): start one rank "
                          "per worker (mpirun -np %d)",
                          j->n, vg_dist_size(), j->n);
            return NULL;
        }
        if (task_index != vg_dist_rank()) {
            vg_status_set(st, VG_INVALID_ARGUMENT, "Server: worker task_index %d runs on MPI rank %d: they must be equal",
                          task_index, vg_dist_rank());
            return NULL;
        }
    }
    vg_server *s = vg__mon_calloc(sizeof *s, st, "out of memory in Server");
    if (!s) return NULL;
    s->ps = ps;
    s->task = task_index;
    snprintf(s->target, sizeof s->target, "mpi://%s/%d", ps ? "ps" : "worker", task_index);
    return s;
}

const char *vg_server_target(const vg_server *s) { return s ? s->target : ""; }

vg_code vg_server_join(vg_server *s, vg_status *st) {
    (void)st;
    (void)s; /* a ps task has nothing to serve; a worker never joins in TF programs */
    return VG_OK;
}

void vg_server_free(vg_server *s) { vg_free(s); }

/* The name's "/job:", "/replica:" and "/task:" parts name a process of the cluster;
 * here every task is its own MPI rank with one CPU, so they name this process: the
 * device left is the rest ("/job:worker/task:1" -> "", "/job:worker/task:1/cpu:0" ->
 * "/cpu:0"), a string vigil's placement check (vg_config_check_placement) takes. */
const char *vg_replica_device_setter(const vg_cluster_spec *cs, const char *worker_device) {
    (void)cs; /* variables stay on every rank (replicated), nothing goes to a ps */
    if (!worker_device) return "";
    const char *p = worker_device;
    static const char *const parts[] = {"/job:", "/replica:", "/task:"};
    for (bool more = true; more;) {
        more = false;
        for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
            size_t n = strlen(parts[i]);
            if (strncmp(p, parts[i], n) == 0) {
                p += n;
                p += strcspn(p, "/");
                more = true;
            }
        }
    }
    return p;
}

/* ---- the check at session creation: every update averaged ------------------------------ */

/* Ops whose output is the same on every rank (an average, a gather, a broadcast). */
static bool collective_type(const char *t) {
    static const char *const types[] = {"VigilFusedAllreduce", "CollectiveReduce",    "CollectiveGather", "VigilSyncReplicasAggregate",
                                        "HorovodBroadcast",    "CollectiveBcastSend", "CollectiveBcastRecv"};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strcmp(t, types[i]) == 0) return true;
    return false;
}

static bool apply_type(const char *t) {
    return strncmp(t, "Apply", 5) == 0 || strncmp(t, "SparseApply", 11) == 0 || strncmp(t, "ResourceApply", 13) == 0 ||
           strncmp(t, "ResourceSparseApply", 19) == 0;
}

/* A world of more than one rank keeps its replicas equal only when every optimizer
 * update (an Apply* op) applies a value that went through a collective: the averaged
 * gradient. An update fed by this rank's own gradient alone (a train op built with a
 * plain optimizer before vg_dist_init, or from vg_gradients) would train one model per
 * rank with no message, so the session refuses to start (FAILED_PRECONDITION naming
 * the op and the fixes). One pass over the ops in creation order (an op's inputs are
 * older than the op; a loop's back edge is ignored). */
static vg_code check_updates_averaged(vg_graph *g, vg_status *st) {
    int n = vg_graph_num_ops(g), maxid = -1;
    for (int i = 0; i < n; i++)
        if (vg_op_id(vg_graph_op(g, i)) > maxid) maxid = vg_op_id(vg_graph_op(g, i));
    unsigned char *reach = vg_calloc((size_t)maxid + 2, 1);
    if (!reach) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in MonitoredTrainingSession");
    vg_code rc = VG_OK;
    for (int i = 0; i < n && rc == VG_OK; i++) {
        vg_op *op = vg_graph_op(g, i);
        int id = vg_op_id(op);
        const char *t = vg_op_type(op);
        bool r = collective_type(t);
        for (int k = 0; k < vg_op_num_inputs(op) && !r; k++) {
            vg_output in = vg_op_input(op, k);
            int iid = in.op ? vg_op_id(in.op) : -1;
            r = iid >= 0 && iid <= maxid && reach[iid];
        }
        reach[id] = r;
        if (r || !apply_type(t)) continue;
        vg_output var = vg_op_input(op, 0);
        rc = vg_status_set(st, VG_FAILED_PRECONDITION,
                           "MonitoredTrainingSession on %d ranks: %s '%s' updates '%s' with a gradient that no "
                           "collective averages over the ranks, so every rank would train its own model. Build the "
                           "train op after vg_dist_init (vg_server_new calls it), where vg_optimizer_minimize and "
                           "compute_gradients average over the ranks, or with vg_dist_minimize / "
                           "vg_dist_compute_gradients (hvd.DistributedOptimizer) or vg_sync_replicas_minimize "
                           "(tf.train.SyncReplicasOptimizer)",
                           vg_dist_size(), t, vg_op_name(op), var.op ? vg_op_name(var.op) : "?");
    }
    vg_free(reach);
    return rc;
}

vg_monitored_session *vg_distributed_training_session_new(vg_graph *g, const char *master, const vg_mts_options *o,
                                                          vg_status *st) {
    vg_mts_options m = o ? *o : (vg_mts_options){0};
    (void)master; /* the MPI world is the cluster */
    vg_hook *all = NULL;
    if (vg_dist_init(st) != VG_OK) goto fail;
    if (!m.not_chief != (vg_dist_rank() == 0)) {
        vg_status_set(st, VG_INVALID_ARGUMENT,
                      "MonitoredTrainingSession: is_chief=%s on MPI rank %d: the chief must be worker 0 = rank 0",
                      !m.not_chief ? "true" : "false", vg_dist_rank());
        goto fail;
    }
    if (g && vg_dist_size() > 1 && check_updates_averaged(g, st) != VG_OK) goto fail;
    all = vg_malloc((size_t)(m.nhooks + 1) * sizeof *all);
    if (!all) {
        vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in MonitoredTrainingSession");
        goto fail;
    }
    for (int i = 0; i < m.nhooks; i++) all[i] = m.hooks[i];
    if (vg_broadcast_global_variables_hook(0, &all[m.nhooks], st) != VG_OK) goto fail;
    m.hooks = all;
    m.nhooks++;
    if (vg_dist_rank() != 0) {
        /* a non-chief initialises locally and takes the chief's values from the
         * broadcast; it writes no checkpoints or summaries and runs no chief hooks */
        for (int i = 0; i < m.nchief_only_hooks; i++) {
            vg_hook h = m.chief_only_hooks[i];
            vg_hook_free(&h);
        }
        m.chief_only_hooks = NULL;
        m.nchief_only_hooks = 0;
        m.checkpoint_dir = NULL;
        m.summary_dir = NULL;
        m.no_step_counter = true;
        m.not_chief = false; /* ChiefSessionCreator: initialise, do not wait on a ready op */
    }
    vg_monitored_session *ms = vg_monitored_training_session_new(g, &m, st);
    vg_free(all);
    return ms;
fail:
    if (o) {
        for (int i = 0; i < o->nhooks; i++) {
            vg_hook h = o->hooks[i];
            vg_hook_free(&h);
        }
        for (int i = 0; i < o->nchief_only_hooks; i++) {
            vg_hook h = o->chief_only_hooks[i];
            vg_hook_free(&h);
        }
    }
    vg_free(all);
    return NULL;
}
