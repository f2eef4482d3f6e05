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
#include "vigil/train_lib.h"
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
    vg_ema *ema;              /* variable_averages (borrowed) */
    vg_output *ema_vars;      /* variables_to_average (owned copy; NULL: trainable) */
    int ema_n;
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

/* ---- gradients in messages ----------------------------------------------------------
 * The op's inputs after the global step are the gradients in the order of its "layout"
 * attr: 'd', a dense gradient (one tensor); 's', an IndexedSlices (values [k, ...] and
 * int64 indices [k]). Its outputs have the same layout. A rank's gradients travel packed
 * in that order: a dense one as its raw bytes, a sparse one as k, the k indices, the
 * k rows of values. The chief's update travels packed the same way. */

typedef struct {
    const char *layout;
    int n;                    /* gradients (layout's length) */
    const vg_tensor *const *in; /* the op's inputs after the global step */
} grads_in;

typedef struct {
    const char *data; /* dense: the values; sparse: the rows */
    const char *idx;     /* k int64 row ids (native order), at any alignment: read with memcpy */
    int64_t k;
} grad_part;

static int64_t row_elems(const vg_tensor *values) {
    int64_t r = 1;
    for (int d = 1; d < vg_tensor_ndims(values); d++) r *= vg_tensor_dims(values)[d];
    return r;
}

static size_t esize(const vg_tensor *t) { return vg_dtype_size(vg_tensor_dtype(t)); }

static int64_t pack_size(const grads_in *gi, const vg_tensor *const *t) {
    int64_t b = 0;
    for (int i = 0, j = 0; i < gi->n; i++) {
        if (gi->layout[i] == 'd') {
            b += vg_tensor_num_elements(t[j]) * (int64_t)esize(t[j]);
            j++;
        } else {
            b += 8 + vg_tensor_num_elements(t[j + 1]) * 8 + vg_tensor_num_elements(t[j]) * (int64_t)esize(t[j]);
            j += 2;
        }
    }
    return b;
}

static void pack(const grads_in *gi, const vg_tensor *const *t, char *p) {
    for (int i = 0, j = 0; i < gi->n; i++) {
        if (gi->layout[i] == 'd') {
            size_t b = (size_t)vg_tensor_num_elements(t[j]) * esize(t[j]);
            memcpy(p, vg_tensor_data(t[j]), b);
            p += b;
            j++;
        } else {
            int64_t k = vg_tensor_num_elements(t[j + 1]);
            memcpy(p, &k, 8);
            memcpy(p + 8, vg_tensor_data(t[j + 1]), (size_t)k * 8);
            p += 8 + k * 8;
            size_t b = (size_t)vg_tensor_num_elements(t[j]) * esize(t[j]);
            memcpy(p, vg_tensor_data(t[j]), b);
            p += b;
            j += 2;
        }
    }
}

/* Splits a packed payload into parts[n] (pointers into p), checking it against this
 * rank's own gradients (dense sizes, row sizes); false when it does not fit. */
static bool unpack(const grads_in *gi, const char *p, int64_t bytes, grad_part *parts) {
    const char *end = p + bytes;
    for (int i = 0, j = 0; i < gi->n; i++) {
        const vg_tensor *t = gi->in[j];
        if (gi->layout[i] == 'd') {
            int64_t b = vg_tensor_num_elements(t) * (int64_t)esize(t);
            if (end - p < b) return false;
            parts[i] = (grad_part){p, NULL, vg_tensor_num_elements(t)};
            p += b;
            j++;
        } else {
            int64_t k;
            if (end - p < 8) return false;
            memcpy(&k, p, 8);
            int64_t rb = row_elems(t) * (int64_t)esize(t);
            if (k < 0 || (end - p - 8) / 8 < k || (rb > 0 && (end - p - 8 - k * 8) / rb < k)) return false;
            parts[i] = (grad_part){p + 8 + k * 8, p + 8, k};
            p += 8 + k * 8 + k * rb;
            j += 2;
        }
    }
    return p == end;
}

static double get_el(const char *data, vg_dtype dt, int64_t i) {
    if (dt == VG_FLOAT) {
        float f;
        memcpy(&f, data + i * 4, 4);
        return f;
    }
    double d;
    memcpy(&d, data + i * 8, 8);
    return d;
}

static void put_el(void *data, vg_dtype dt, int64_t i, double v) {
    if (dt == VG_FLOAT) ((float *)data)[i] = (float)v;
    else ((double *)data)[i] = v;
}

typedef struct {
    int64_t idx;
    int c;
    int64_t row;
} sparse_entry;

static int entry_cmp(const void *a, const void *b) {
    const sparse_entry *x = a, *y = b;
    if (x->idx != y->idx) return x->idx < y->idx ? -1 : 1;
    if (x->c != y->c) return x->c < y->c ? -1 : 1;
    return x->row < y->row ? -1 : x->row > y->row;
}

/* The mean of R ranks' gradients (parts[c * n + i]) into new output tensors: a dense
 * gradient's sum over the ranks divided by R; a sparse one's rows merged by index, each
 * row divided by the number of ranks whose gradient holds it (TF's
 * SparseConditionalAccumulator averages element-wise), indices ascending. Sums in
 * double. */
static vg_code average(const grads_in *gi, const grad_part *parts, int R, vg_tensor **out, vg_status *st) {
    int n = gi->n;
    for (int i = 0, j = 0; i < n; i++) {
        const vg_tensor *t = gi->in[j];
        vg_dtype dt = vg_tensor_dtype(t);
        if (gi->layout[i] == 'd') {
            int64_t e = vg_tensor_num_elements(t);
            out[j] = vg_tensor_new(dt, vg_tensor_dims(t), vg_tensor_ndims(t), st);
            if (!out[j]) return st->code;
            for (int64_t x = 0; x < e; x++) {
                double acc = 0;
                for (int c = 0; c < R; c++) acc += get_el(parts[c * n + i].data, dt, x);
                put_el(vg_tensor_data(out[j]), dt, x, acc / R);
            }
            j++;
            continue;
        }
        int64_t total = 0, re = row_elems(t);
        for (int c = 0; c < R; c++) total += parts[c * n + i].k;
        sparse_entry *en = vg_malloc((size_t)(total > 0 ? total : 1) * sizeof *en);
        double *acc = vg_malloc((size_t)(re > 0 ? re : 1) * sizeof *acc);
        if (!en || !acc) {
            vg_free(en);
            vg_free(acc);
            return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory averaging sparse gradients");
        }
        int64_t q = 0;
        for (int c = 0; c < R; c++)
            for (int64_t r = 0; r < parts[c * n + i].k; r++) {
                int64_t ix; /* a message's ids need not be 8-byte aligned */
                memcpy(&ix, parts[c * n + i].idx + r * 8, sizeof ix);
                en[q++] = (sparse_entry){ix, c, r};
            }
        qsort(en, (size_t)total, sizeof *en, entry_cmp);
        int64_t m = 0;
        for (int64_t x = 0; x < total; x++) m += x == 0 || en[x].idx != en[x - 1].idx;
        int64_t dims[VG_MAX_DIMS];
        int nd = vg_tensor_ndims(t);
        for (int d = 0; d < nd; d++) dims[d] = vg_tensor_dims(t)[d];
        dims[0] = m;
        out[j] = vg_tensor_new(dt, dims, nd, st);
        out[j + 1] = out[j] ? vg_tensor_new(VG_INT64, &m, 1, st) : NULL;
        if (!out[j] || !out[j + 1]) {
            vg_free(en);
            vg_free(acc);
            return st->code;
        }
        int64_t *oi = vg_tensor_data(out[j + 1]);
        for (int64_t x = 0, u = 0; x < total; u++) {
            int64_t y = x, ranks = 0;
            for (int64_t e = 0; e < re; e++) acc[e] = 0;
            for (; y < total && en[y].idx == en[x].idx; y++) {
                ranks += y == x || en[y].c != en[y - 1].c; /* a rank's duplicate rows add, count once */
                const grad_part *gp = &parts[en[y].c * n + i];
                for (int64_t e = 0; e < re; e++) acc[e] += get_el(gp->data, dt, en[y].row * re + e);
            }
            oi[u] = en[x].idx;
            for (int64_t e = 0; e < re; e++) put_el(vg_tensor_data(out[j]), dt, u * re + e, acc[e] / (double)ranks);
            x = y;
        }
        vg_free(en);
        vg_free(acc);
        j += 2;
    }
    return VG_OK;
}

/* Output tensors from a packed update (the worker's side). */
static vg_code outputs_from_packed(const grads_in *gi, const grad_part *parts, vg_tensor **out, vg_status *st) {
    for (int i = 0, j = 0; i < gi->n; i++) {
        const vg_tensor *t = gi->in[j];
        int64_t dims[VG_MAX_DIMS];
        int nd = vg_tensor_ndims(t);
        for (int d = 0; d < nd; d++) dims[d] = vg_tensor_dims(t)[d];
        if (gi->layout[i] == 's') dims[0] = parts[i].k;
        out[j] = vg_tensor_new(vg_tensor_dtype(t), dims, nd, st);
        if (!out[j]) return st->code;
        int64_t e = gi->layout[i] == 's' ? parts[i].k * row_elems(t) : vg_tensor_num_elements(t);
        memcpy(vg_tensor_data(out[j]), parts[i].data, (size_t)e * esize(t));
        if (gi->layout[i] == 's') {
            out[j + 1] = vg_tensor_new(VG_INT64, &parts[i].k, 1, st);
            if (!out[j + 1]) return st->code;
            memcpy(vg_tensor_data(out[j + 1]), parts[i].idx, (size_t)parts[i].k * 8);
            j += 2;
        } else {
            j++;
        }
    }
    return VG_OK;
}

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

static void fmt_ranks(char *buf, size_t cap, const vg_sync_replicas_optimizer *s, const bool *have) {
    size_t k = 0;
    buf[0] = 0;
    for (int r = 1; r < s->size && k + 12 < cap; r++)
        if (!have[r] && !s->done[r]) k += (size_t)snprintf(buf + k, cap - k, "%s%d", k ? ", " : "", r);
}

/* The chief's step: its own gradients and R - 1 fresh ones from the workers, averaged
 * into out; then the update (header, contributors, packed means) to every worker. */
static vg_code chief_step(vg_sync_replicas_optimizer *s, int64_t step, const grads_in *gi, vg_tensor **out,
                          vg_status *st) {
    int R = s->replicas_to_aggregate, n = gi->n;
    int64_t own = pack_size(gi, gi->in);
    char **msgs = vg_calloc((size_t)R, sizeof *msgs);
    grad_part *parts = vg_calloc((size_t)R * (size_t)(n > 0 ? n : 1), sizeof *parts);
    bool *have = vg_calloc((size_t)s->size, sizeof *have);
    vg_code rc = VG_OK;
    if (!msgs || !parts || !have || !(msgs[0] = vg_malloc((size_t)own + 1))) {
        rc = vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in SyncReplicas");
        goto out;
    }
    pack(gi, gi->in, msgs[0]);
    unpack(gi, msgs[0], own, parts);
    have[0] = true;
    s->nlast = 0;
    s->last_ranks[s->nlast++] = 0;
    int count = 1;
    /* until R gradients of this step are in; then, without waiting, the messages that
     * already arrived (surplus gradients of this step would be stale at the next one:
     * dropped now, so that nothing piles up when R is small) */
    for (;;) {
        bool wait = count < R;
        int live = 1;
        for (int r = 1; r < s->size; r++) live += !s->done[r];
        if (wait && live < R) {
            rc = vg_status_set(st, VG_FAILED_PRECONDITION,
                               "SyncReplicasOptimizer (chief, global step %lld): only %d rank(s) still train but "
                               "replicas_to_aggregate=%d gradients are needed per step",
                               (long long)step, live, R);
            break;
        }
        void *m = NULL;
        int64_t bytes = 0;
        int from = -1;
        if (s->size == 1) break;
        if (vg_dist_recv(VG_DIST_ANY_SOURCE, TAG_GRAD, wait, &m, &bytes, &from, st) != VG_OK) {
            char missing[160], why[200];
            fmt_ranks(missing, sizeof missing, s, have);
            snprintf(why, sizeof why, "%.190s", st->msg);
            rc = vg_status_set(st, st->code,
                               "SyncReplicasOptimizer (chief, global step %lld): %d of %d gradients arrived; no "
                               "gradient from rank(s) %s: %s",
                               (long long)step, count, R, missing, why);
            break;
        }
        if (!m) break; /* nothing more arrived */
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
            if ((rc = send_msg(from, TAG_UPD, fin, HDR, NULL, 0, st)) != VG_OK) break;
            continue;
        }
        if (h[0] == MSG_GRAD && (h[1] < step || (h[1] == step && !wait && !have[from]))) {
            /* the ConditionalAccumulator's stale gradient (or a surplus one of this step,
             * stale once this update is applied) */
            s->stale_dropped++;
            vg_logf(VG_LOG_DEBUG, "SyncReplicasOptimizer: dropped rank %d's stale gradient of step %lld (global step %lld)",
                    from, (long long)h[1], (long long)step);
            vg_free(m);
            continue;
        }
        if (h[0] != MSG_GRAD || h[1] != step || have[from] || bytes != HDR * 8 + h[3] ||
            !unpack(gi, (const char *)m + HDR * 8, h[3], parts + (size_t)count * (size_t)n)) {
            rc = vg_status_set(st, VG_INTERNAL,
                               "SyncReplicasOptimizer (chief, global step %lld): rank %d sent a gradient of step "
                               "%lld that does not fit this rank's (%lld bytes): do the ranks run different graphs?",
                               (long long)step, from, (long long)h[1], (long long)bytes);
            vg_free(m);
            break;
        }
        msgs[count++] = m;
        have[from] = true;
        s->last_ranks[s->nlast++] = from;
    }
    if (rc == VG_OK) rc = average(gi, parts, R, out, st);
    if (rc == VG_OK && s->size > 1) {
        int64_t pb = pack_size(gi, (const vg_tensor *const *)out), hb = (HDR + (int64_t)s->nlast) * 8;
        char *upd = vg_malloc((size_t)(hb + pb) + 1);
        if (!upd) {
            rc = vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in SyncReplicas");
        } else {
            int64_t *hdr = (int64_t *)(void *)upd;
            hdr[0] = MSG_UPD;
            hdr[1] = step;
            hdr[2] = s->nlast;
            hdr[3] = pb;
            for (int i = 0; i < s->nlast; i++) hdr[HDR + i] = s->last_ranks[i];
            pack(gi, (const vg_tensor *const *)out, upd + hb);
            for (int r = 1; r < s->size && rc == VG_OK; r++)
                if (!s->done[r]) rc = vg_dist_send(upd, hb + pb, r, TAG_UPD, st);
            vg_free(upd);
        }
    }
out:
    for (int c = 0; msgs && c < R; c++) vg_free(msgs[c]);
    vg_free(msgs);
    vg_free(parts);
    vg_free(have);
    return rc;
}

/* A worker's step: its gradients to the chief (TF's worker pushes to the accumulators
 * even when behind: the chief drops a stale one), then the next update (the token). */
static vg_code worker_step(vg_sync_replicas_optimizer *s, int64_t step, const grads_in *gi, vg_tensor **out,
                           vg_status *st) {
    int64_t pb = pack_size(gi, gi->in);
    char *buf = vg_malloc((size_t)(HDR * 8 + pb) + 1);
    if (!buf) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in SyncReplicas");
    int64_t hdr[HDR] = {MSG_GRAD, step, s->rank, pb};
    memcpy(buf, hdr, sizeof hdr);
    pack(gi, gi->in, buf + HDR * 8);
    vg_code rc = vg_dist_send(buf, HDR * 8 + pb, 0, TAG_GRAD, st);
    vg_free(buf);
    if (rc != VG_OK) return rc;
    void *m = NULL;
    int64_t bytes = 0;
    if (vg_dist_recv(0, TAG_UPD, true, &m, &bytes, NULL, st) != VG_OK) {
        char why[200];
        snprintf(why, sizeof why, "%.190s", st->msg);
        return vg_status_set(st, st->code,
                             "SyncReplicasOptimizer (rank %d, global step %lld): no update from the chief (rank 0): %s",
                             s->rank, (long long)step, why);
    }
    const int64_t *h = m;
    grad_part *parts = vg_calloc((size_t)(gi->n > 0 ? gi->n : 1), sizeof *parts);
    if (!parts) rc = vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in SyncReplicas");
    else if (bytes < HDR * 8 || h[0] == MSG_FIN)
        rc = vg_status_set(st, VG_OUT_OF_RANGE, "SyncReplicasOptimizer (rank %d): the chief has finished training",
                           s->rank);
    else if (h[0] != MSG_UPD || h[1] != step || h[2] < 1 || h[2] > s->size || bytes != (HDR + h[2]) * 8 + h[3] ||
             !unpack(gi, (const char *)m + (HDR + h[2]) * 8, h[3], parts))
        rc = vg_status_set(st, VG_INTERNAL,
                           "SyncReplicasOptimizer (rank %d, global step %lld): the chief's update of step %lld (%lld "
                           "bytes) does not fit this rank's gradients: do the ranks run different graphs?",
                           s->rank, (long long)step, (long long)h[1], (long long)bytes);
    if (rc == VG_OK) {
        s->nlast = (int)h[2];
        for (int i = 0; i < s->nlast; i++) s->last_ranks[i] = (int)h[HDR + i];
        rc = outputs_from_packed(gi, parts, out, st);
    }
    vg_free(parts);
    vg_free(m);
    return rc;
}

static vg_code aggregate_kernel(vg_custom_kernel_ctx *ctx, void *user) {
    (void)user;
    vg_status *st = vg_custom_status(ctx);
    const vg_op *op = vg_custom_kernel_op(ctx);
    int64_t h = -1;
    const char *layout = NULL;
    size_t nl = 0;
    vg_op_attr_int(op, "handle", &h);
    vg_op_attr_string(op, "layout", &layout, &nl);
    vg_sync_replicas_optimizer *s = lookup(h);
    if (!s) return vg_status_set(st, VG_FAILED_PRECONDITION, "SyncReplicasOptimizer: the optimizer was freed");
    int nin = vg_custom_num_inputs(ctx) - 1;
    const vg_tensor *gs = vg_custom_input(ctx, 0);
    int64_t step = vg_tensor_dtype(gs) == VG_INT32 ? *(const int32_t *)vg_tensor_data(gs)
                                                   : *(const int64_t *)vg_tensor_data(gs);
    const vg_tensor **in = vg_malloc((size_t)(nin > 0 ? nin : 1) * sizeof *in);
    vg_tensor **out = vg_calloc((size_t)(nin > 0 ? nin : 1), sizeof *out);
    vg_code rc = VG_OK;
    if (!in || !out) rc = vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in SyncReplicas");
    for (int i = 0; rc == VG_OK && i < nin; i++) in[i] = vg_custom_input(ctx, i + 1);
    grads_in gi = {layout, (int)nl, in};
    pthread_mutex_lock(&s->mu);
    if (rc == VG_OK && s->finished)
        rc = vg_status_set(st, VG_FAILED_PRECONDITION, "SyncReplicasOptimizer (rank %d): finished", s->rank);
    if (rc == VG_OK) rc = s->rank == 0 ? chief_step(s, step, &gi, out, st) : worker_step(s, step, &gi, out, st);
    if (rc == VG_OK) {
        s->updates++;
        s->gradients_applied += s->nlast;
        s->last_step = step;
    }
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < nin && out; i++) {
        if (rc == VG_OK) vg_custom_set_output(ctx, i, out[i]);
        else vg_tensor_free(out[i]);
    }
    vg_free(out);
    vg_free((void *)in);
    return rc;
}

static vg_code aggregate_shape(vg_op *op, vg_status *st, void *user) {
    (void)st;
    (void)user;
    const char *layout = "";
    size_t nl = 0;
    vg_op_attr_string(op, "layout", &layout, &nl);
    int n = vg_op_num_inputs(op) - 1;
    vg_custom_shape_set_num_outputs(op, n);
    for (int i = 0, j = 0; i < (int)nl && j < n; i++) {
        vg_output in = vg_op_input(op, j + 1);
        vg_shape sh = vg_output_shape(in);
        if (layout[i] == 's' && sh.ndims > 0) sh.dims[0] = -1; /* the merged rows */
        vg_custom_shape_set_output(op, j, vg_output_dtype(in), sh);
        if (layout[i] == 's' && j + 1 < n) {
            vg_shape k = vg_shape_make((const int64_t[]){-1}, 1);
            vg_custom_shape_set_output(op, j + 1, VG_INT64, k);
            j++;
        }
        j++;
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
    vg_free(s->ema_vars);
    vg_free(s);
}

vg_code vg_sync_replicas_optimizer_set_variable_averages(vg_sync_replicas_optimizer *s, vg_ema *ema,
                                                         const vg_output *vars, int n, vg_status *st) {
    if (!s || !ema || n < 0 || (n > 0 && !vars))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "set_variable_averages: NULL optimizer or EMA, or bad list");
    if (s->applied)
        return vg_status_set(st, VG_FAILED_PRECONDITION,
                             "set_variable_averages: apply_gradients was already called (TF takes variable_averages "
                             "in the constructor)");
    vg_output *copy = NULL;
    if (n > 0) {
        copy = vg_malloc((size_t)n * sizeof *copy);
        if (!copy) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in set_variable_averages");
        memcpy(copy, vars, (size_t)n * sizeof *copy);
    }
    vg_free(s->ema_vars);
    s->ema = ema;
    s->ema_vars = copy;
    s->ema_n = n;
    return VG_OK;
}

int vg_sync_replicas_optimizer_total_num_replicas(const vg_sync_replicas_optimizer *s) {
    return s ? s->total_num_replicas : 0;
}

int vg_sync_replicas_optimizer_replicas_to_aggregate(const vg_sync_replicas_optimizer *s) {
    return s ? s->replicas_to_aggregate : 0;
}

bool vg_sync_replicas_optimizer_applied(const vg_sync_replicas_optimizer *s) { return s && s->applied; }

/* The gradient is UnsortedSegmentSum(values [k, ...], indices [k], rows): vigil's graph
 * form of TF's IndexedSlices (a Gather's gradient). */
static bool indexed_slices(vg_output grad, vg_output *values, vg_output *indices, vg_output *rows) {
    if (!grad.op || grad.index != 0 || strcmp(vg_op_type(grad.op), "UnsortedSegmentSum") != 0) return false;
    vg_output v = vg_op_input(grad.op, 0), ix = vg_op_input(grad.op, 1);
    vg_shape vs = vg_output_shape(v), is = vg_output_shape(ix);
    vg_dtype it = vg_output_dtype(ix);
    if (is.ndims != 1 || vs.ndims < 1 || (it != VG_INT32 && it != VG_INT64)) return false;
    *values = v;
    *indices = ix;
    *rows = vg_op_input(grad.op, 2);
    return true;
}

vg_op *vg_sync_replicas_optimizer_apply_gradients(vg_sync_replicas_optimizer *s, vg_graph *g, const vg_output *grads,
                                                  const vg_output *vars, int n, vg_output global_step,
                                                  const char *name) {
    if (!g) return NULL;
    if (!s || !grads || !vars || n <= 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "SyncReplicasOptimizer.apply_gradients: NULL or empty arguments");
        return NULL;
    }
    if (!global_step.op) {
        /* TF: ValueError("Global step is required to check staleness") */
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "SyncReplicasOptimizer.apply_gradients: Global step is required "
                                                   "to check staleness");
        return NULL;
    }
    vg_output *ins = vg_malloc((size_t)(2 * n + 1) * sizeof *ins), *rows = vg_malloc((size_t)n * sizeof *rows);
    int *idx = vg_malloc((size_t)n * sizeof *idx);
    char *layout = vg_malloc((size_t)n + 1);
    vg_output *mg = vg_malloc((size_t)n * sizeof *mg), *mv = vg_malloc((size_t)n * sizeof *mv);
    vg_op *train = NULL;
    if (!ins || !rows || !idx || !layout || !mg || !mv) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory in SyncReplicasOptimizer.apply_gradients");
        goto out;
    }
    vg_graph_push_scope(g, name ? name : "sync_replicas");
    ins[0] = vg_identity(g, global_step, "local_step"); /* TF's sync_rep_local_step */
    int k = 0, nin = 1;
    for (int i = 0; i < n; i++) {
        if (!grads[i].op) continue; /* TF skips (None, var) pairs */
        vg_output v, ix, r;
        bool sparse = indexed_slices(grads[i], &v, &ix, &r);
        vg_dtype dt = vg_output_dtype(sparse ? v : grads[i]);
        if (dt != VG_FLOAT && dt != VG_DOUBLE) {
            vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                               "SyncReplicasOptimizer: the gradient of '%s' is %s: float32 or float64 only",
                               vars[i].op ? vg_op_name(vars[i].op) : "?", vg_dtype_name(dt));
            break;
        }
        if (sparse) {
            ins[nin++] = v;
            ins[nin++] = vg_output_dtype(ix) == VG_INT64 ? ix : vg_cast(g, ix, VG_INT64, "indices_int64");
            rows[k] = r;
        } else {
            ins[nin++] = grads[i];
        }
        layout[k] = sparse ? 's' : 'd';
        idx[k++] = i;
    }
    layout[k] = 0;
    vg_op *agg = NULL;
    if (vg_graph_status(g, NULL) == VG_OK && k == 0)
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "No gradients provided for any variable");
    if (vg_graph_status(g, NULL) == VG_OK) {
        vg_op_builder *b = vg_op_builder_new(g, "VigilSyncReplicasAggregate", "aggregate");
        if (b) {
            vg_op_builder_add_inputs(b, ins, nin);
            vg_op_builder_set_attr_int(b, "handle", s->handle);
            vg_op_builder_set_attr_int(b, "replicas_to_aggregate", s->replicas_to_aggregate);
            vg_op_builder_set_attr_string(b, "layout", layout, (size_t)k);
            agg = vg_op_builder_finish(b);
        }
    }
    /* a sparse mean is an IndexedSlices again: the optimizer's sparse apply */
    for (int i = 0, j = 0; agg && i < k; i++) {
        mv[i] = vars[idx[i]];
        if (layout[i] == 'd') {
            mg[i] = vg_out(agg, j++);
            continue;
        }
        vg_op_builder *b = vg_op_builder_new(g, "UnsortedSegmentSum", "mean_slices");
        if (!b) {
            agg = NULL;
            break;
        }
        vg_op_builder_add_input(b, vg_out(agg, j));
        vg_op_builder_add_input(b, vg_out(agg, j + 1));
        vg_op_builder_add_input(b, rows[i]);
        vg_op *us = vg_op_builder_finish(b);
        if (!us) {
            agg = NULL;
            break;
        }
        mg[i] = vg_out(us, 0);
        j += 2;
    }
    vg_graph_pop_scope(g);
    if (agg) {
        train = vg_optimizer_apply_gradients(s->opt, g, mg, mv, k, global_step, name ? name : "sync_replicas");
        if (train && s->ema) { /* TF's chief: variable_averages.apply after each update */
            vg_graph_push_control_deps(g, &train, 1);
            train = vg_ema_apply(s->ema, s->ema_vars, s->ema_n);
            vg_graph_pop_control_deps(g);
        }
        if (train) s->applied = true;
    }
out:
    vg_free(ins);
    vg_free(rows);
    vg_free(idx);
    vg_free(layout);
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
    if (s->finished) goto out;
    s->finished = true;
    if (s->size == 1) goto out;
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
