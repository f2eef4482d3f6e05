/*
 * sync_replicas.c - tf.train.SyncReplicasOptimizer with backup workers (issue 31 item
 * 6) over MPI point-to-point messages, written on the public API.
 *
 * TF 1.15 (sync_replicas_optimizer.py): every worker pushes its gradients, tagged with
 * its local step, into ConditionalAccumulators on the ps; the chief's queue runner
 * takes the average of the first replicas_to_aggregate (R) gradients of the current
 * global step (a gradient of an older step is dropped by the accumulator), applies it,
 * increments the global step and releases tokens; each worker, after pushing, blocks on
 * a token and continues with the new variables.
 *
 * Here rank 0 (the chief) holds the accumulators. Every rank runs the same graph:
 *
 *     grads = d loss / d vars (this rank's own, never averaged by a collective)
 *     mean  = VigilSyncReplicasAggregate(global_step, grads...)
 *     train = opt.apply_gradients(mean, vars, global_step)
 *
 * On the chief the aggregate op counts its own gradient, then receives gradient
 * messages from any rank (MPI_ANY_SOURCE) until R of the current global step are in,
 * dropping those of an older step, averages them (in double), and sends the mean to
 * every worker (the token: "update of step s, made of these ranks' gradients"). On a
 * worker it sends its gradient tagged with its global step, then waits for the next
 * update and outputs its mean. Every rank applies the same means in the same order with
 * the same optimizer, so variables, slots and global steps stay identical on every rank
 * (the global step advances once per update). A worker that fell behind sends
 * gradients of its older step, which the chief drops, and applies one waiting update
 * per run until it has caught up, as TF's worker takes one token per step. Each worker
 * contributes at most one
 * gradient per update, so R > N (TF: some workers push twice) is refused.
 *
 * The end: a worker's finish sends "done" and drains its updates until the chief's
 * "fin"; the chief's finish takes messages until every worker is done. Every message
 * is received, so MPI finalizes cleanly.
 */
#include "vigil/custom_op.h"
#include "vigil/distributed.h"
#include "vigil/gradients.h"
#include "vigil/ops.h"
#include "vigil/optimizer.h"
#include "vigil/variables.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TAG_GRAD = 71, TAG_UPD = 72 };
enum { MSG_GRAD = 1, MSG_DONE = 2, MSG_UPD = 3, MSG_FIN = 4 };
enum { HDR = 4 }; /* int64 header words: kind, step, rank / count, payload bytes */

struct vg_sync_replicas_optimizer {
    vg_optimizer *opt;
    int replicas_to_aggregate, total_num_replicas;
    int rank, size;
    int handle;
    bool applied, finished;
    bool *done;               /* chief: worker r sent "done" */
    int64_t updates, stale_dropped, gradients_applied;
    int64_t last_step;        /* the step of the last update's gradients (-1: none) */
    int *last_ranks;          /* its contributors */
    int nlast;
    pthread_mutex_t mu;       /* one step at a time */
};

/* ---- the handle table (an op's attr names its optimizer) ------------------------------ */

#define MAX_HANDLES 64
static pthread_mutex_t table_mu = PTHREAD_MUTEX_INITIALIZER;
static vg_sync_replicas_optimizer *table[MAX_HANDLES];

static vg_sync_replicas_optimizer *lookup(int64_t h) {
    pthread_mutex_lock(&table_mu);
    vg_sync_replicas_optimizer *s = h >= 0 && h < MAX_HANDLES ? table[h] : NULL;
    pthread_mutex_unlock(&table_mu);
    return s;
}

/* ---- messages -------------------------------------------------------------------------- */

static int64_t grad_bytes(const vg_tensor *const *g, int n) {
    int64_t b = 0;
    for (int i = 0; i < n; i++) b += vg_tensor_num_elements(g[i]) * (int64_t)vg_dtype_size(vg_tensor_dtype(g[i]));
    return b;
}

static void add_into(double *acc, const void *p, vg_dtype dt, int64_t n) {
    if (dt == VG_FLOAT)
        for (int64_t i = 0; i < n; i++) acc[i] += ((const float *)p)[i];
    else
        for (int64_t i = 0; i < n; i++) acc[i] += ((const double *)p)[i];
}

/* A gradient message's payload bytes for this rank's tensors, or -1 when they do not
 * match (another graph on that rank). */
static vg_code send_msg(int dest, int tag, const int64_t *hdr, int nhdr, const void *payload, int64_t pbytes,
                        vg_status *st) {
    int64_t hb = (int64_t)nhdr * 8;
    char *m = vg_malloc((size_t)(hb + pbytes) + 1);
    if (!m) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory building a SyncReplicas message");
    memcpy(m, hdr, (size_t)hb);
    if (pbytes) memcpy(m + hb, payload, (size_t)pbytes);
    vg_code rc = vg_dist_send(m, hb + pbytes, dest, tag, st);
    vg_free(m);
    return rc;
}

static vg_code fmt_ranks(char *buf, size_t cap, const vg_sync_replicas_optimizer *s, const bool *have) {
    size_t k = 0;
    buf[0] = 0;
    for (int r = 1; r < s->size && k + 12 < cap; r++)
        if (!have[r] && !s->done[r]) k += (size_t)snprintf(buf + k, cap - k, "%s%d", k ? ", " : "", r);
    return VG_OK;
}

/* The chief's step: its own gradient and R - 1 fresh ones from the workers. */
static vg_code chief_step(vg_sync_replicas_optimizer *s, int64_t step, const vg_tensor *const *g, int n, double *acc,
                          int64_t total_elems, vg_status *st) {
    int64_t pb = grad_bytes(g, n);
    bool *have = vg_calloc((size_t)s->size, sizeof *have);
    if (!have) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in SyncReplicas");
    int64_t off = 0;
    for (int i = 0; i < n; i++) {
        add_into(acc + off, vg_tensor_data(g[i]), vg_tensor_dtype(g[i]), vg_tensor_num_elements(g[i]));
        off += vg_tensor_num_elements(g[i]);
    }
    have[0] = true;
    s->nlast = 0;
    s->last_ranks[s->nlast++] = 0;
    int count = 1;
    vg_code rc = VG_OK;
    while (count < s->replicas_to_aggregate) {
        int live = 1;
        for (int r = 1; r < s->size; r++) live += !s->done[r];
        if (live < s->replicas_to_aggregate) {
            rc = vg_status_set(st, VG_FAILED_PRECONDITION,
                               "SyncReplicasOptimizer (chief, global step %lld): only %d rank(s) still train but "
                               "replicas_to_aggregate=%d gradients are needed per step",
                               (long long)step, live, s->replicas_to_aggregate);
            break;
        }
        void *m = NULL;
        int64_t bytes = 0;
        int from = -1;
        if (vg_dist_recv(VG_DIST_ANY_SOURCE, TAG_GRAD, true, &m, &bytes, &from, st) != VG_OK) {
            char missing[160];
            fmt_ranks(missing, sizeof missing, s, have);
            char why[200];
            snprintf(why, sizeof why, "%.190s", st->msg);
            rc = vg_status_set(st, st->code,
                               "SyncReplicasOptimizer (chief, global step %lld): %d of %d gradients arrived; no "
                               "gradient from rank(s) %s: %s",
                               (long long)step, count, s->replicas_to_aggregate, missing, why);
            break;
        }
        const int64_t *h = m;
        if (bytes < HDR * 8 || from <= 0 || from >= s->size) {
            vg_free(m);
            rc = vg_status_set(st, VG_INTERNAL, "SyncReplicasOptimizer: malformed message from rank %d", from);
            break;
        }
        if (h[0] == MSG_DONE) {
            s->done[from] = true;
            vg_free(m);
            int64_t fin[HDR] = {MSG_FIN, step, 0, 0};
            if (send_msg(from, TAG_UPD, fin, HDR, NULL, 0, st) != VG_OK) {
                rc = st->code;
                break;
            }
            continue;
        }
        if (h[1] < step) { /* the ConditionalAccumulator's stale gradient */
            s->stale_dropped++;
            vg_logf(VG_LOG_INFO, "SyncReplicasOptimizer: dropped rank %d's stale gradient of step %lld (global step %lld)",
                    from, (long long)h[1], (long long)step);
            vg_free(m);
            continue;
        }
        if (h[0] != MSG_GRAD || h[1] != step || h[3] != pb || bytes != HDR * 8 + pb || have[from]) {
            rc = vg_status_set(st, VG_INTERNAL,
                               "SyncReplicasOptimizer (chief, global step %lld): rank %d sent a gradient of step "
                               "%lld with %lld bytes (expected %lld): the ranks run different graphs?",
                               (long long)step, from, (long long)h[1], (long long)h[3], (long long)pb);
            vg_free(m);
            break;
        }
        const char *p = (const char *)m + HDR * 8;
        off = 0;
        for (int i = 0; i < n; i++) {
            int64_t e = vg_tensor_num_elements(g[i]);
            add_into(acc + off, p, vg_tensor_dtype(g[i]), e);
            p += e * (int64_t)vg_dtype_size(vg_tensor_dtype(g[i]));
            off += e;
        }
        vg_free(m);
        have[from] = true;
        s->last_ranks[s->nlast++] = from;
        count++;
    }
    vg_free(have);
    if (rc != VG_OK) return rc;
    for (int64_t i = 0; i < total_elems; i++) acc[i] /= s->replicas_to_aggregate;
    return VG_OK;
}

/* Builds output tensors from acc (double) in the gradients' dtypes and shapes; when
 * bytes_out is non-NULL also packs them into *bytes_out (the update's payload). */
static vg_code outputs_from(const double *acc, const vg_tensor *const *g, int n, vg_tensor **out, char *pack,
                            vg_status *st) {
    int64_t off = 0;
    char *p = pack;
    for (int i = 0; i < n; i++) {
        vg_dtype dt = vg_tensor_dtype(g[i]);
        int64_t e = vg_tensor_num_elements(g[i]);
        out[i] = vg_tensor_new(dt, vg_tensor_dims(g[i]), vg_tensor_ndims(g[i]), st);
        if (!out[i]) return st->code;
        void *d = vg_tensor_data(out[i]);
        if (dt == VG_FLOAT)
            for (int64_t k = 0; k < e; k++) ((float *)d)[k] = (float)acc[off + k];
        else
            for (int64_t k = 0; k < e; k++) ((double *)d)[k] = acc[off + k];
        size_t b = (size_t)e * vg_dtype_size(dt);
        if (p) {
            memcpy(p, d, b);
            p += b;
        }
        off += e;
    }
    return VG_OK;
}

/* A worker's step: its gradient to the chief (TF's worker pushes to the accumulators
 * even when behind: the chief drops a stale one), then the next update (the token). */
static vg_code worker_step(vg_sync_replicas_optimizer *s, int64_t step, const vg_tensor *const *g, int n,
                           vg_tensor **out, vg_status *st) {
    int64_t pb = grad_bytes(g, n);
    void *m = NULL;
    int64_t bytes = 0;
    char *buf = vg_malloc((size_t)pb + 1), *p = buf;
    if (!buf) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in SyncReplicas");
    for (int i = 0; i < n; i++) {
        size_t b = (size_t)vg_tensor_num_elements(g[i]) * vg_dtype_size(vg_tensor_dtype(g[i]));
        memcpy(p, vg_tensor_data(g[i]), b);
        p += b;
    }
    int64_t hdr[HDR] = {MSG_GRAD, step, s->rank, pb};
    vg_code src = send_msg(0, TAG_GRAD, hdr, HDR, buf, pb, st);
    vg_free(buf);
    if (src != VG_OK) return src;
    if (vg_dist_recv(0, TAG_UPD, true, &m, &bytes, NULL, st) != VG_OK) {
        char why[200];
        snprintf(why, sizeof why, "%.190s", st->msg);
        return vg_status_set(st, st->code,
                             "SyncReplicasOptimizer (rank %d, global step %lld): no update from the chief (rank 0): %s",
                             s->rank, (long long)step, why);
    }
    const int64_t *h = m;
    vg_code rc = VG_OK;
    if (bytes < HDR * 8 || h[0] == MSG_FIN)
        rc = vg_status_set(st, VG_OUT_OF_RANGE, "SyncReplicasOptimizer (rank %d): the chief has finished training",
                           s->rank);
    else if (h[1] != step || h[2] < 1 || h[2] > s->size || bytes != (HDR + h[2]) * 8 + pb)
        rc = vg_status_set(st, VG_INTERNAL,
                           "SyncReplicasOptimizer (rank %d, global step %lld): the chief's update is of step %lld "
                           "with %lld bytes (expected %lld): the ranks run different graphs?",
                           s->rank, (long long)step, (long long)h[1], (long long)bytes,
                           (long long)((HDR + h[2]) * 8 + pb));
    if (rc == VG_OK) {
        s->nlast = (int)h[2];
        for (int i = 0; i < s->nlast; i++) s->last_ranks[i] = (int)h[HDR + i];
        const char *p = (const char *)m + (HDR + h[2]) * 8;
        for (int i = 0; i < n && rc == VG_OK; i++) {
            out[i] = vg_tensor_new(vg_tensor_dtype(g[i]), vg_tensor_dims(g[i]), vg_tensor_ndims(g[i]), st);
            if (!out[i]) {
                rc = st->code;
                break;
            }
            size_t b = (size_t)vg_tensor_num_elements(g[i]) * vg_dtype_size(vg_tensor_dtype(g[i]));
            memcpy(vg_tensor_data(out[i]), p, b);
            p += b;
        }
    }
    vg_free(m);
    return rc;
}

static vg_code aggregate_kernel(vg_custom_kernel_ctx *ctx, void *user) {
    (void)user;
    vg_status *st = vg_custom_status(ctx);
    int64_t h = -1;
    vg_op_attr_int(vg_custom_kernel_op(ctx), "handle", &h);
    vg_sync_replicas_optimizer *s = lookup(h);
    if (!s) return vg_status_set(st, VG_FAILED_PRECONDITION, "SyncReplicasOptimizer: the optimizer was freed");
    int n = vg_custom_num_inputs(ctx) - 1;
    const vg_tensor *gs = vg_custom_input(ctx, 0);
    int64_t step = vg_tensor_dtype(gs) == VG_INT32 ? *(const int32_t *)vg_tensor_data(gs)
                                                   : *(const int64_t *)vg_tensor_data(gs);
    const vg_tensor **g = vg_malloc((size_t)(n > 0 ? n : 1) * sizeof *g);
    vg_tensor **out = vg_calloc((size_t)(n > 0 ? n : 1), sizeof *out);
    int64_t elems = 0;
    for (int i = 0; g && i < n; i++) {
        g[i] = vg_custom_input(ctx, i + 1);
        elems += vg_tensor_num_elements(g[i]);
    }
    double *acc = vg_calloc((size_t)(elems > 0 ? elems : 1), sizeof *acc);
    char *pack = NULL;
    vg_code rc = VG_OK;
    if (!g || !out || !acc) rc = vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in SyncReplicas");
    pthread_mutex_lock(&s->mu);
    if (rc == VG_OK && s->finished)
        rc = vg_status_set(st, VG_FAILED_PRECONDITION, "SyncReplicasOptimizer (rank %d): finished", s->rank);
    if (rc == VG_OK && s->rank == 0) {
        rc = chief_step(s, step, g, n, acc, elems, st);
        int64_t pb = grad_bytes(g, n), hb = (HDR + (int64_t)s->nlast) * 8;
        if (rc == VG_OK && s->size > 1) {
            pack = vg_malloc((size_t)(hb + pb) + 1);
            if (!pack) rc = vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in SyncReplicas");
        }
        if (rc == VG_OK) rc = outputs_from(acc, g, n, out, pack ? pack + hb : NULL, st);
        if (rc == VG_OK && pack) {
            int64_t *hdr = (int64_t *)(void *)pack;
            hdr[0] = MSG_UPD;
            hdr[1] = step;
            hdr[2] = s->nlast;
            hdr[3] = pb;
            for (int i = 0; i < s->nlast; i++) hdr[HDR + i] = s->last_ranks[i];
            for (int r = 1; r < s->size && rc == VG_OK; r++)
                if (!s->done[r]) rc = vg_dist_send(pack, hb + pb, r, TAG_UPD, st);
        }
    } else if (rc == VG_OK) {
        rc = worker_step(s, step, g, n, out, st);
    }
    if (rc == VG_OK) {
        s->updates++;
        s->gradients_applied += s->nlast;
        s->last_step = step;
    }
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < n && out; i++) {
        if (rc == VG_OK) vg_custom_set_output(ctx, i, out[i]);
        else vg_tensor_free(out[i]);
    }
    vg_free(pack);
    vg_free(acc);
    vg_free(out);
    vg_free((void *)g);
    return rc;
}

static vg_code aggregate_shape(vg_op *op, vg_status *st, void *user) {
    (void)st;
    (void)user;
    int n = vg_op_num_inputs(op) - 1;
    vg_custom_shape_set_num_outputs(op, n);
    for (int i = 0; i < n; i++) {
        vg_output in = vg_op_input(op, i + 1);
        vg_custom_shape_set_output(op, i, vg_output_dtype(in), vg_output_shape(in));
    }
    return VG_OK;
}

static vg_code reg_status = VG_OK;
static vg_status reg_st;
static void register_once(void) {
    vg_custom_op_def d = {"VigilSyncReplicasAggregate", 1, -1, true, aggregate_shape, aggregate_kernel, NULL, NULL};
    reg_status = vg_register_op(&d, &reg_st);
}

/* ---- the public API ------------------------------------------------------------------- */

vg_sync_replicas_optimizer *vg_sync_replicas_optimizer_new(vg_optimizer *opt, int replicas_to_aggregate,
                                                           int total_num_replicas, vg_status *st) {
    if (!opt) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "SyncReplicasOptimizer: NULL optimizer");
        return NULL;
    }
    if (vg_dist_init(st) != VG_OK) return NULL;
    int size = vg_dist_size();
    if (total_num_replicas <= 0) total_num_replicas = replicas_to_aggregate; /* TF: None */
    if (replicas_to_aggregate <= 0) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "SyncReplicasOptimizer: replicas_to_aggregate=%d must be positive",
                      replicas_to_aggregate);
        return NULL;
    }
    if (total_num_replicas != size) {
        vg_status_set(st, VG_INVALID_ARGUMENT,
                      "SyncReplicasOptimizer: total_num_replicas=%d but the MPI world has %d rank(s); in vigil each "
                      "replica (worker) is one MPI rank: start the job with mpirun -np %d, or pass %d",
                      total_num_replicas, size, total_num_replicas, size);
        return NULL;
    }
    if (replicas_to_aggregate > total_num_replicas) {
        vg_status_set(st, VG_INVALID_ARGUMENT,
                      "SyncReplicasOptimizer: replicas_to_aggregate=%d > total_num_replicas=%d: in TF some workers "
                      "then push two gradients to one update; in vigil each rank contributes at most one gradient "
                      "per update: pass replicas_to_aggregate <= %d and a larger batch per rank",
                      replicas_to_aggregate, total_num_replicas, total_num_replicas);
        return NULL;
    }
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, register_once);
    if (reg_status != VG_OK) {
        vg_status_set(st, reg_status, "SyncReplicasOptimizer: registering its op: %s", reg_st.msg);
        return NULL;
    }
    vg_sync_replicas_optimizer *s = vg_calloc(1, sizeof *s);
    if (s) {
        s->done = vg_calloc((size_t)size, sizeof *s->done);
        s->last_ranks = vg_calloc((size_t)size, sizeof *s->last_ranks);
    }
    if (!s || !s->done || !s->last_ranks) {
        if (s) {
            vg_free(s->done);
            vg_free(s->last_ranks);
        }
        vg_free(s);
        vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory allocating SyncReplicasOptimizer");
        return NULL;
    }
    s->opt = opt;
    s->replicas_to_aggregate = replicas_to_aggregate;
    s->total_num_replicas = total_num_replicas;
    s->rank = vg_dist_rank();
    s->size = size;
    s->last_step = -1;
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_lock(&table_mu);
    s->handle = -1;
    for (int i = 0; i < MAX_HANDLES && s->handle < 0; i++)
        if (!table[i]) {
            table[i] = s;
            s->handle = i;
        }
    pthread_mutex_unlock(&table_mu);
    if (s->handle < 0) {
        pthread_mutex_destroy(&s->mu);
        vg_free(s->done);
        vg_free(s->last_ranks);
        vg_free(s);
        vg_status_set(st, VG_RESOURCE_EXHAUSTED, "more than %d SyncReplicasOptimizers alive", MAX_HANDLES);
        return NULL;
    }
    return s;
}

void vg_sync_replicas_optimizer_free(vg_sync_replicas_optimizer *s) {
    if (!s) return;
    pthread_mutex_lock(&table_mu);
    table[s->handle] = NULL;
    pthread_mutex_unlock(&table_mu);
    pthread_mutex_destroy(&s->mu);
    vg_free(s->done);
    vg_free(s->last_ranks);
    vg_free(s);
}

int vg_sync_replicas_optimizer_total_num_replicas(const vg_sync_replicas_optimizer *s) {
    return s ? s->total_num_replicas : 0;
}

int vg_sync_replicas_optimizer_replicas_to_aggregate(const vg_sync_replicas_optimizer *s) {
    return s ? s->replicas_to_aggregate : 0;
}

bool vg_sync_replicas_optimizer_applied(const vg_sync_replicas_optimizer *s) { return s && s->applied; }

vg_op *vg_sync_replicas_optimizer_apply_gradients(vg_sync_replicas_optimizer *s, vg_graph *g, const vg_output *grads,
                                                  const vg_output *vars, int n, vg_output global_step,
                                                  const char *name) {
    if (!g) return NULL;
    if (!s || !grads || !vars || n <= 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "SyncReplicasOptimizer.apply_gradients: NULL or empty arguments");
        return NULL;
    }
    if (!global_step.op) {
        /* TF: "Global step is required to check staleness" */
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "SyncReplicasOptimizer.apply_gradients: Global step is required "
                                                   "to check staleness");
        return NULL;
    }
    vg_output *ins = vg_malloc((size_t)(n + 1) * sizeof *ins);
    int *idx = vg_malloc((size_t)n * sizeof *idx);
    vg_output *mg = vg_malloc((size_t)n * sizeof *mg), *mv = vg_malloc((size_t)n * sizeof *mv);
    vg_op *train = NULL;
    if (!ins || !idx || !mg || !mv) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory in SyncReplicasOptimizer.apply_gradients");
        goto out;
    }
    vg_graph_push_scope(g, name ? name : "sync_replicas");
    ins[0] = vg_identity(g, global_step, "local_step"); /* TF's sync_rep_local_step */
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (!grads[i].op) continue; /* TF skips (None, var) pairs */
        vg_dtype dt = vg_output_dtype(grads[i]);
        if (dt != VG_FLOAT && dt != VG_DOUBLE) {
            vg_graph_set_error(g, VG_INVALID_ARGUMENT, "SyncReplicasOptimizer: gradient %d is %s: float32 or float64 only",
                               i, vg_dtype_name(dt));
            break;
        }
        ins[1 + k] = grads[i];
        idx[k++] = i;
    }
    vg_op *agg = NULL;
    if (vg_graph_status(g, NULL) == VG_OK && k == 0)
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "No gradients provided for any variable");
    if (vg_graph_status(g, NULL) == VG_OK) {
        vg_op_builder *b = vg_op_builder_new(g, "VigilSyncReplicasAggregate", "aggregate");
        if (b) {
            vg_op_builder_add_inputs(b, ins, k + 1);
            vg_op_builder_set_attr_int(b, "handle", s->handle);
            vg_op_builder_set_attr_int(b, "replicas_to_aggregate", s->replicas_to_aggregate);
            agg = vg_op_builder_finish(b);
        }
    }
    vg_graph_pop_scope(g);
    if (agg) {
        for (int i = 0; i < k; i++) {
            mg[i] = vg_out(agg, i);
            mv[i] = vars[idx[i]];
        }
        train = vg_optimizer_apply_gradients(s->opt, g, mg, mv, k, global_step, name ? name : "sync_replicas");
        if (train) s->applied = true;
    }
out:
    vg_free(ins);
    vg_free(idx);
    vg_free(mg);
    vg_free(mv);
    return train;
}

vg_op *vg_sync_replicas_optimizer_minimize(vg_sync_replicas_optimizer *s, vg_graph *g, vg_output loss,
                                           vg_output global_step, const char *name) {
    if (!g) return NULL;
    int n = 0;
    const vg_output *vars = vg_graph_collection(g, VG_TRAINABLE_VARIABLES, &n);
    if (!s || n <= 0 || !vars) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, s ? "No variables to optimize." : "SyncReplicasOptimizer: NULL");
        return NULL;
    }
    vg_output *vcopy = vg_malloc((size_t)n * sizeof *vcopy), *grads = vg_malloc((size_t)n * sizeof *grads);
    vg_op *train = NULL;
    vg_status st;
    if (!vcopy || !grads) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory in SyncReplicasOptimizer.minimize");
    } else {
        memcpy(vcopy, vars, (size_t)n * sizeof *vcopy); /* the collection grows (slots) */
        /* this rank's own gradients: vg_gradients never averages over the ranks */
        if (vg_gradients(g, &loss, 1, vcopy, n, NULL, grads, &st) != VG_OK) {
            if (vg_graph_status(g, NULL) == VG_OK) vg_graph_set_error(g, st.code, "%s", st.msg);
        } else {
            train = vg_sync_replicas_optimizer_apply_gradients(s, g, grads, vcopy, n, global_step, name);
        }
    }
    vg_free(vcopy);
    vg_free(grads);
    return train;
}

vg_code vg_sync_replicas_optimizer_stats(const vg_sync_replicas_optimizer *s, vg_sync_replicas_stats *out,
                                         vg_status *st) {
    if (!s || !out) return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_sync_replicas_optimizer_stats: NULL argument");
    vg_sync_replicas_optimizer *m = (vg_sync_replicas_optimizer *)s;
    pthread_mutex_lock(&m->mu);
    memset(out, 0, sizeof *out);
    out->updates = s->updates;
    out->gradients_applied = s->gradients_applied;
    out->stale_dropped = s->stale_dropped;
    out->last_step = s->last_step;
    out->num_last_ranks = s->nlast < VG_SYNC_REPLICAS_MAX_RANKS ? s->nlast : VG_SYNC_REPLICAS_MAX_RANKS;
    for (int i = 0; i < out->num_last_ranks; i++) out->last_ranks[i] = s->last_ranks[i];
    pthread_mutex_unlock(&m->mu);
    return VG_OK;
}

vg_code vg_sync_replicas_optimizer_finish(vg_sync_replicas_optimizer *s, vg_status *st) {
    if (!s) return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_sync_replicas_optimizer_finish: NULL");
    pthread_mutex_lock(&s->mu);
    vg_code rc = VG_OK;
    if (s->finished || s->size == 1) goto out;
    s->finished = true;
    if (s->rank != 0) {
        int64_t hdr[HDR] = {MSG_DONE, -1, s->rank, 0};
        if (send_msg(0, TAG_GRAD, hdr, HDR, NULL, 0, st) != VG_OK) {
            rc = st->code;
            goto out;
        }
        for (;;) { /* updates not applied (training stopped before them), then "fin" */
            void *m = NULL;
            int64_t bytes = 0;
            if (vg_dist_recv(0, TAG_UPD, true, &m, &bytes, NULL, st) != VG_OK) {
                char why[200];
                snprintf(why, sizeof why, "%.190s", st->msg);
                rc = vg_status_set(st, st->code, "SyncReplicasOptimizer (rank %d) finishing: no reply from the chief "
                                                 "(rank 0): %s", s->rank, why);
                goto out;
            }
            bool fin = bytes >= HDR * 8 && ((const int64_t *)m)[0] == MSG_FIN;
            if (!fin) vg_logf(VG_LOG_WARN, "SyncReplicasOptimizer (rank %d): an update arrived after training "
                                           "stopped: this rank's variables now lag the chief's", s->rank);
            vg_free(m);
            if (fin) break;
        }
    } else {
        for (;;) {
            int waiting = 0;
            for (int r = 1; r < s->size; r++) waiting += !s->done[r];
            if (!waiting) break;
            void *m = NULL;
            int64_t bytes = 0;
            int from = -1;
            if (vg_dist_recv(VG_DIST_ANY_SOURCE, TAG_GRAD, true, &m, &bytes, &from, st) != VG_OK) {
                char missing[160];
                bool *none = vg_calloc((size_t)s->size, sizeof *none);
                if (none) fmt_ranks(missing, sizeof missing, s, none);
                else snprintf(missing, sizeof missing, "?");
                vg_free(none);
                char why[200];
                snprintf(why, sizeof why, "%.190s", st->msg);
                rc = vg_status_set(st, st->code, "SyncReplicasOptimizer (chief) finishing: rank(s) %s never "
                                                 "finished: %s", missing, why);
                goto out;
            }
            const int64_t *h = m;
            if (bytes >= HDR * 8 && h[0] == MSG_DONE && from > 0) {
                s->done[from] = true;
                int64_t fin[HDR] = {MSG_FIN, -1, 0, 0};
                rc = send_msg(from, TAG_UPD, fin, HDR, NULL, 0, st);
            } else {
                s->stale_dropped++; /* a gradient of a step that will never come */
            }
            vg_free(m);
            if (rc != VG_OK) goto out;
        }
    }
    rc = vg_dist_flush_sends(st);
out:
    pthread_mutex_unlock(&s->mu);
    return rc;
}
