/*
 * queue_ops.c - TF's queues as session resources: FIFOQueueV2, RandomShuffleQueueV2,
 * PaddingFIFOQueueV2 (shapes may have unknown dims; DequeueMany / DequeueUpTo pad
 * each component to the largest element of the batch with zeros / "", as TF's
 * padding_fifo_queue.cc) and the ops on their handles (QueueEnqueueV2, QueueEnqueueManyV2, QueueDequeueV2,
 * QueueDequeueManyV2, QueueDequeueUpToV2, QueueCloseV2, QueueSizeV2).
 *
 * A queue op creates its queue once per session (vg__session_resource, keyed by
 * shared_name or the op's name) and outputs a VG_RESOURCE scalar holding the queue
 * pointer; the other ops take that handle as input 0.
 *
 * Storage: when every component has a fully defined shape and a numeric dtype, each
 * component is one ring buffer of fixed-size rows, so EnqueueMany / DequeueMany are
 * one or two memcpys per component (no per-element allocation). Otherwise (shapes
 * unspecified, or strings) a component's "row" is a vg_tensor pointer to a private
 * copy. Enqueued data is always copied: feeds are only borrowed for a run.
 *
 * Semantics follow tensorflow/core/kernels/{queue_base,fifo_queue,
 * random_shuffle_queue_op}.cc:
 *  - enqueue and dequeue attempts are served in arrival order (a waiter list each);
 *    the attempt at the front makes partial progress (an EnqueueMany inserts what
 *    fits, a DequeueMany takes what is there), so n may exceed the capacity;
 *  - RandomShuffleQueue only hands out elements above min_after_dequeue until closed,
 *    picking a uniformly random one each time;
 *  - a plain close waits behind pending enqueues; close with cancel_pending_enqueues
 *    cancels them ("Enqueue operation was cancelled");
 *  - after close, remaining elements drain; a dequeue that cannot be satisfied puts
 *    its partial batch back and fails with OUT_OF_RANGE ("... is closed and has
 *    insufficient elements (requested 64, current size 10)"); DequeueUpTo returns
 *    what is left instead; enqueue fails with CANCELLED ("... is closed.");
 *  - the session's close cancels every waiter (CANCELLED); the run's timeout gives
 *    DEADLINE_EXCEEDED "Timed out waiting for notification".
 * Deviation: a dequeue cut short by a timeout or cancellation puts its partial batch
 * back (TF drops it).
 */
#include "core/xoshiro.h"
#include "graph/graph_impl.h"
#include "kernels/kernel.h"
#include "kernels/state/queue_internal.h"
#include "vigil/queue_ops.h"
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#define NOT_DIFF VG__OP_NOT_DIFFERENTIABLE
#define QUEUE_FLAGS (VG__OP_BLOCKING | VG__OP_STATEFUL | NOT_DIFF)

/* ------------------------------------------------------------------------ */
/* the queue */

typedef struct waiter {
    struct waiter *prev, *next;
    bool cancelled; /* set by close(cancel_pending_enqueues) */
} waiter;

typedef struct wlist {
    waiter *head, *tail;
    int nwait; /* threads blocked on the list's condvar */
} wlist;

typedef struct vg__queue {
    pthread_mutex_t mu;
    pthread_cond_t enq_cv, deq_cv;
    char *name;          /* TF's resource name, used in messages */
    const char *kind;    /* "FIFOQueue" / "RandomShuffleQueue" */
    const char *op_type; /* for shared-queue checks */
    bool shuffle;
    bool padding;        /* PaddingFIFOQueue: element storage, padded batches */
    int ncomp;
    vg_dtype *types;
    vg_shape *shapes;    /* NULL: unspecified */
    bool rows;           /* raw rows (else vg_tensor pointers) */
    size_t *row_bytes;   /* per component */
    uint8_t **buf;       /* per component: cap rows */
    int64_t *perm;       /* shuffle queues: element -> row, then the free rows */
    int64_t head, size, cap;
    int64_t capacity;    /* logical limit */
    int64_t min_after;
    uint64_t rng[4];
    bool closed, cancelled;
    wlist enq, deq;
} vg__queue;

static void wl_push(wlist *l, waiter *w) {
    w->next = NULL;
    w->prev = l->tail;
    if (l->tail) l->tail->next = w;
    else l->head = w;
    l->tail = w;
}

static void wl_remove(wlist *l, waiter *w) {
    if (w->prev) w->prev->next = w->next;
    else l->head = w->next;
    if (w->next) w->next->prev = w->prev;
    else l->tail = w->prev;
}

static inline void wake(pthread_cond_t *cv, const wlist *l) {
    if (l->nwait) pthread_cond_broadcast(cv);
}

/* Blocks on cv (queue mutex held) until woken or the deadline passes. */
static vg_code wait_on(vg__queue *q, pthread_cond_t *cv, wlist *l, int64_t deadline, vg_status *st) {
    int rc;
    l->nwait++;
    if (deadline > 0) {
        struct timespec ts = {(time_t)(deadline / 1000000000LL), (long)(deadline % 1000000000LL)};
        rc = pthread_cond_timedwait(cv, &q->mu, &ts);
    } else {
        rc = pthread_cond_wait(cv, &q->mu);
    }
    l->nwait--;
    if (rc == ETIMEDOUT) return vg_status_set(st, VG_DEADLINE_EXCEEDED, "Timed out waiting for notification");
    return VG_OK;
}

static void rng_seed(uint64_t *s, int64_t seed, int64_t seed2) {
    uint64_t x = (uint64_t)seed * 0x9e3779b97f4a7c15ull ^ (uint64_t)seed2;
    if (seed == 0 && seed2 == 0) {
        /* Both unset: a fresh random stream, as TF's random::New64(). */
        static atomic_uint_fast64_t salt;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ (uint64_t)(uintptr_t)s ^
            atomic_fetch_add(&salt, 0x632be59bd9b4e019ull);
    }
    vg__xoshiro_seed(s, x);
}

/* ---- storage --------------------------------------------------------------
 * FIFO: a ring; logical element i lives in row (head + i) % cap.
 * Shuffle: rows stay where they were written; perm[i] is the row of live element i
 * for i < size, and perm[size..cap) lists the free rows. Removing element i swaps
 * perm entries instead of moving row data, so a random dequeue copies each row once. */

static inline uint8_t *slot(const vg__queue *q, int c, int64_t i) {
    int64_t p;
    if (q->shuffle) {
        p = q->perm[i];
    } else {
        p = q->head + i;
        if (p >= q->cap) p -= q->cap;
    }
    return q->buf[c] + (size_t)p * q->row_bytes[c];
}

/* Makes room for `need` elements (all components or none). */
static bool ring_reserve(vg__queue *q, int64_t need) {
    if (need <= q->cap) return true;
    int64_t ncap = q->cap ? q->cap : 16;
    while (ncap < need) ncap = ncap > INT64_MAX / 2 ? need : ncap * 2;
    if (ncap > q->capacity && need <= q->capacity) ncap = q->capacity;
    uint8_t *nb_local[16], **nb = q->ncomp <= 16 ? nb_local : vg__calloc((size_t)q->ncomp, sizeof(uint8_t *));
    if (!nb) return false;
    bool ok = true;
    int64_t *nperm = NULL;
    if (q->shuffle) ok = (nperm = vg__realloc(q->perm, sizeof(int64_t) * (size_t)q->cap,
                                              sizeof(int64_t) * (size_t)ncap)) != NULL;
    for (int c = 0; c < q->ncomp; c++) {
        size_t bytes = (size_t)ncap * q->row_bytes[c];
        nb[c] = ok ? vg__aligned_alloc(bytes ? bytes : 1, 64) : NULL;
        ok = ok && nb[c];
    }
    if (ok) {
        for (int c = 0; c < q->ncomp; c++) {
            size_t rb = q->row_bytes[c];
            if (q->shuffle) {
                if (q->cap) memcpy(nb[c], q->buf[c], (size_t)q->cap * rb); /* rows keep their index */
            } else {
                int64_t n1 = q->size < q->cap - q->head ? q->size : q->cap - q->head;
                if (n1 > 0) memcpy(nb[c], q->buf[c] + (size_t)q->head * rb, (size_t)n1 * rb);
                if (q->size > n1) memcpy(nb[c] + (size_t)n1 * rb, q->buf[c], (size_t)(q->size - n1) * rb);
            }
            vg__free(q->buf[c]);
            q->buf[c] = nb[c];
        }
        if (q->shuffle) {
            q->perm = nperm;
            for (int64_t i = q->cap; i < ncap; i++) q->perm[i] = i; /* new free rows */
        }
        q->head = 0;
        q->cap = ncap;
    } else {
        if (nperm) q->perm = nperm; /* grown but unused: still valid */
        for (int c = 0; c < q->ncomp; c++) vg__free(nb[c]);
    }
    if (nb != nb_local) vg__free(nb);
    return ok;
}

/* Copies n contiguous rows between src/dst and the ring at logical position pos. */
static void ring_write(vg__queue *q, int c, int64_t pos, const uint8_t *src, int64_t n) {
    size_t rb = q->row_bytes[c];
    int64_t p = (q->head + pos) % q->cap, n1 = n < q->cap - p ? n : q->cap - p;
    memcpy(q->buf[c] + (size_t)p * rb, src, (size_t)n1 * rb);
    if (n > n1) memcpy(q->buf[c], src + (size_t)n1 * rb, (size_t)(n - n1) * rb);
}
static void ring_read(const vg__queue *q, int c, int64_t pos, uint8_t *dst, int64_t n) {
    size_t rb = q->row_bytes[c];
    int64_t p = (q->head + pos) % q->cap, n1 = n < q->cap - p ? n : q->cap - p;
    memcpy(dst, q->buf[c] + (size_t)p * rb, (size_t)n1 * rb);
    if (n > n1) memcpy(dst + (size_t)n1 * rb, q->buf[c], (size_t)(n - n1) * rb);
}

/* Appends rows src[c][from .. from+n). Capacity reserved by the caller. */
static void push_back(vg__queue *q, uint8_t *const *src, int64_t from, int64_t n) {
    for (int c = 0; c < q->ncomp; c++) {
        size_t rb = q->row_bytes[c];
        const uint8_t *s = src[c] + (size_t)from * rb;
        if (!q->shuffle) {
            ring_write(q, c, q->size, s, n);
            continue;
        }
        for (int64_t k = 0; k < n; k++) memcpy(slot(q, c, q->size + k), s + (size_t)k * rb, rb);
    }
    q->size += n;
}

/* Takes n elements into dst rows [at, at+n): the oldest ones (FIFO) or random ones. */
static void take(vg__queue *q, uint8_t *const *dst, int64_t at, int64_t n) {
    if (!q->shuffle) {
        for (int c = 0; c < q->ncomp; c++) ring_read(q, c, 0, dst[c] + (size_t)at * q->row_bytes[c], n);
        q->head = (q->head + n) % q->cap;
        q->size -= n;
        if (q->size == 0) q->head = 0;
        return;
    }
    /* Random element out, the last live entry into its place in perm. The next
     * index is drawn one step ahead so that its (cache-cold) rows can be prefetched. */
    int64_t next = (int64_t)(vg__xoshiro_next(q->rng) % (uint64_t)q->size);
    for (int64_t k = 0; k < n; k++) {
        int64_t idx = next, last = q->size - 1;
        if (k + 1 < n && last > 0) {
            next = (int64_t)(vg__xoshiro_next(q->rng) % (uint64_t)last);
            int64_t pn = q->perm[next == idx ? last : next];
            for (int c = 0; c < q->ncomp; c++) {
                const uint8_t *p = q->buf[c] + (size_t)pn * q->row_bytes[c];
                size_t rb = q->row_bytes[c] < 8192 ? q->row_bytes[c] : 8192;
                for (size_t off = 0; off < rb; off += 64) __builtin_prefetch(p + off);
            }
        }
        for (int c = 0; c < q->ncomp; c++) {
            size_t rb = q->row_bytes[c];
            memcpy(dst[c] + (size_t)(at + k) * rb, slot(q, c, idx), rb);
        }
        int64_t freed = q->perm[idx];
        q->perm[idx] = q->perm[last];
        q->perm[last] = freed;
        q->size--;
    }
}

/* Puts a partial dequeue back: at the front for FIFO (order kept), anywhere for
 * shuffling. False on allocation failure (the elements are then lost). */
static bool restore(vg__queue *q, uint8_t *const *dst, int64_t n) {
    if (!ring_reserve(q, q->size + n)) return false;
    if (q->shuffle) {
        push_back(q, dst, 0, n);
        return true;
    }
    q->head = (q->head - n % q->cap + q->cap) % q->cap;
    for (int c = 0; c < q->ncomp; c++) ring_write(q, c, 0, dst[c], n);
    q->size += n;
    return true;
}

/* ---- the four blocking operations ------------------------------------------ */

/* One enqueue attempt (Enqueue, EnqueueMany, a plain Close), in line behind earlier
 * ones (q->mu held; released here): waits for its turn at the head of the enqueue
 * line, then calls step(q, arg, st, &rc) each time it holds the head until step
 * returns true (done; rc as step left it); a cancelled queue or attempt (CANCELLED) or
 * the deadline ends it too. Leaves the line and wakes the next enqueuer. */
typedef bool (*enqueue_step)(vg__queue *q, void *arg, vg_status *st, vg_code *rc);
static vg_code enqueue_attempt(vg__queue *q, int64_t deadline, enqueue_step step, void *arg, vg_status *st) {
    waiter w = {0};
    vg_code rc = VG_OK;
    wl_push(&q->enq, &w);
    for (;;) {
        if (q->cancelled || w.cancelled) {
            rc = vg_status_set(st, VG_CANCELLED, "Enqueue operation was cancelled");
            break;
        }
        if (q->enq.head == &w && step(q, arg, st, &rc)) break;
        if ((rc = wait_on(q, &q->enq_cv, &q->enq, deadline, st)) != VG_OK) break;
    }
    bool was_head = q->enq.head == &w;
    wl_remove(&q->enq, &w);
    if (was_head) wake(&q->enq_cv, &q->enq);
    pthread_mutex_unlock(&q->mu);
    return rc;
}

typedef struct enq_rows {
    uint8_t *const *src;
    int64_t n, *done;
} enq_rows;

/* Enqueue's turn: as many rows as there is room for; done when all are in. */
static bool enqueue_rows_step(vg__queue *q, void *arg, vg_status *st, vg_code *rc) {
    enq_rows *e = arg;
    if (q->closed) {
        *rc = vg_status_set(st, VG_CANCELLED, "%s '%s' is closed.", q->kind, q->name);
        return true;
    }
    int64_t room = q->capacity - q->size, k = e->n - *e->done < room ? e->n - *e->done : room;
    if (k > 0) {
        if (!ring_reserve(q, q->size + k)) {
            *rc = VG_OOM(st, "queue storage");
            return true;
        }
        push_back(q, e->src, *e->done, k);
        *e->done += k;
        wake(&q->deq_cv, &q->deq);
    }
    return *e->done == e->n;
}

/* Inserts n rows (src[c] row k = element k) behind earlier enqueue attempts. *done
 * gets how many went in (a cancelled EnqueueMany may leave a prefix, as in TF). */
static vg_code q_enqueue(vg__queue *q, uint8_t *const *src, int64_t n, int64_t deadline, int64_t *done, vg_status *st) {
    *done = 0;
    enq_rows e = {src, n, done};
    pthread_mutex_lock(&q->mu);
    return enqueue_attempt(q, deadline, enqueue_rows_step, &e, st);
}

/* Takes n elements into dst rows, in arrival order of dequeue attempts. With
 * allow_small (DequeueUpTo) a closed queue gives what is left: *got < n. */
static vg_code q_dequeue(vg__queue *q, uint8_t *const *dst, int64_t n, bool allow_small, int64_t deadline,
                         int64_t *got, vg_status *st) {
    waiter w = {0};
    vg_code rc = VG_OK;
    int64_t taken = 0;
    pthread_mutex_lock(&q->mu);
    wl_push(&q->deq, &w);
    for (;;) {
        if (q->cancelled) {
            rc = vg_status_set(st, VG_CANCELLED, "Dequeue operation was cancelled");
            break;
        }
        if (q->deq.head == &w) {
            int64_t size = q->size, want = n - taken;
            if (q->closed && size < want) {
                if (taken > 0) {
                    if (!restore(q, dst, taken)) {
                        rc = vg_status_set(st, VG_DATA_LOSS,
                                           "Failed to restore element from partially-dequeued batch to %s: "
                                           "out of memory",
                                           q->kind);
                        break;
                    }
                    taken = 0;
                }
                if (allow_small && q->size > 0) {
                    n = q->size;
                } else {
                    rc = vg_status_set(st, VG_OUT_OF_RANGE,
                                       "%s '%s' is closed and has insufficient elements (requested %lld, "
                                       "current size %lld)",
                                       q->kind, q->name, (long long)want, (long long)size);
                    break;
                }
            }
            int64_t avail = q->closed ? q->size : q->size - q->min_after, k = n - taken < avail ? n - taken : avail;
            if (k > 0) {
                take(q, dst, taken, k);
                taken += k;
                wake(&q->enq_cv, &q->enq);
            }
            if (taken == n) break;
        }
        if ((rc = wait_on(q, &q->deq_cv, &q->deq, deadline, st)) != VG_OK) break;
    }
    if (rc != VG_OK && taken > 0 && restore(q, dst, taken)) taken = 0;
    bool was_head = q->deq.head == &w;
    wl_remove(&q->deq, &w);
    if (was_head) wake(&q->deq_cv, &q->deq);
    pthread_mutex_unlock(&q->mu);
    *got = taken;
    return rc;
}

/* A plain close's turn: closes the queue (wakes the dequeuers); a closed one fails. */
static bool close_step(vg__queue *q, void *arg, vg_status *st, vg_code *rc) {
    if (q->closed) {
        *rc = vg_status_set(st, VG_CANCELLED, "Queue '%s' is already closed.", q->name);
    } else {
        q->closed = true;
        wake(&q->deq_cv, &q->deq);
    }
    return true;
}

static vg_code q_close(vg__queue *q, bool cancel_pending, int64_t deadline, vg_status *st) {
    pthread_mutex_lock(&q->mu);
    if (cancel_pending) {
        q->closed = true;
        for (waiter *w = q->enq.head; w; w = w->next) w->cancelled = true;
        wake(&q->enq_cv, &q->enq);
        wake(&q->deq_cv, &q->deq);
        pthread_mutex_unlock(&q->mu);
        return VG_OK;
    }
    /* A plain close is an enqueue attempt: it takes effect after earlier enqueues. */
    return enqueue_attempt(q, deadline, close_step, NULL, st);
}

/* ---- resource callbacks ----------------------------------------------------- */

static void queue_cancel(void *r) {
    vg__queue *q = r;
    pthread_mutex_lock(&q->mu);
    q->cancelled = true;
    pthread_cond_broadcast(&q->enq_cv);
    pthread_cond_broadcast(&q->deq_cv);
    pthread_mutex_unlock(&q->mu);
}

static void queue_destroy(void *r) {
    vg__queue *q = r;
    if (!q) return;
    if (q->buf) {
        if (!q->rows)
            for (int c = 0; c < q->ncomp; c++)
                for (int64_t i = 0; q->buf[c] && i < q->size; i++) {
                    vg_tensor *t;
                    memcpy(&t, slot(q, c, i), sizeof t);
                    vg_tensor_free(t);
                }
        for (int c = 0; c < q->ncomp; c++) vg__free(q->buf[c]);
    }
    vg__free(q->buf);
    vg__free(q->perm);
    vg__free(q->row_bytes);
    vg__free(q->types);
    vg__free(q->shapes);
    vg__free(q->name);
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->enq_cv);
    pthread_cond_destroy(&q->deq_cv);
    vg__free(q);
}

static const vg__resource_ops queue_resource_ops = {queue_cancel, queue_destroy};

/* Creates the queue for a queue op (called under the session's resource lock). */
static void *queue_create(void *arg, vg_status *st) {
    const vg_op *op = arg;
    static atomic_long ids;
    const vg_dtype *types;
    const vg_shape *shapes = NULL;
    int n, nshapes = 0;
    if (!vg_op_attr_type_list(op, "component_types", &types, &n) || n < 1) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "queue needs at least one component type");
        return NULL;
    }
    if (!vg_op_attr_shape_list(op, "shapes", &shapes, &nshapes)) nshapes = 0;
    vg__queue *q = vg__calloc(1, sizeof *q);
    if (!q) goto oom;
    pthread_mutex_init(&q->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&q->enq_cv, &ca);
    pthread_cond_init(&q->deq_cv, &ca);
    pthread_condattr_destroy(&ca);
    q->op_type = vg_op_type(op);
    q->shuffle = strcmp(q->op_type, "RandomShuffleQueueV2") == 0;
    q->padding = strcmp(q->op_type, "PaddingFIFOQueueV2") == 0;
    q->kind = q->shuffle ? "RandomShuffleQueue" : q->padding ? "PaddingFIFOQueue" : "FIFOQueue";
    q->ncomp = n;
    int64_t cap = vg__attr_int_or(op, "capacity", -1);
    q->capacity = cap < 0 ? INT_MAX : cap; /* TF's kUnbounded */
    q->min_after = q->shuffle ? vg__attr_int_or(op, "min_after_dequeue", 0) : 0;
    if (q->min_after < 0) q->min_after = 0;
    rng_seed(q->rng, vg__attr_int_or(op, "seed", 0), vg__attr_int_or(op, "seed2", 0));
    const char *shared;
    size_t slen = 0;
    char nm[1100];
    if (vg_op_attr_string(op, "shared_name", &shared, &slen) && slen > 0)
        snprintf(nm, sizeof nm, "%.*s", (int)slen, shared);
    else
        snprintf(nm, sizeof nm, "_%ld_%s", (long)atomic_fetch_add(&ids, 1), vg_op_name(op));
    q->name = vg__strdup(nm);
    q->types = vg__malloc(sizeof(vg_dtype) * (size_t)n);
    q->row_bytes = vg__calloc((size_t)n, sizeof(size_t));
    q->buf = vg__calloc((size_t)n, sizeof(uint8_t *));
    if (!q->name || !q->types || !q->row_bytes || !q->buf) goto oom;
    memcpy(q->types, types, sizeof(vg_dtype) * (size_t)n);
    q->rows = nshapes == n && !q->padding;
    if (q->padding && nshapes != n) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "PaddingFIFOQueue needs a shape (rank) for each of its %d components", n);
        queue_destroy(q);
        return NULL;
    }
    if (nshapes == n) {
        q->shapes = vg__malloc(sizeof(vg_shape) * (size_t)n);
        if (!q->shapes) goto oom;
        memcpy(q->shapes, shapes, sizeof(vg_shape) * (size_t)n);
    }
    for (int c = 0; c < n; c++) {
        if (q->shapes && !q->padding && !vg_shape_is_fully_defined(&q->shapes[c])) {
            vg_status_set(st, VG_INVALID_ARGUMENT, "queue component %d: shape must be fully defined", c);
            queue_destroy(q);
            return NULL;
        }
        if (types[c] == VG_STRING) q->rows = false;
    }
    for (int c = 0; c < n; c++)
        q->row_bytes[c] = q->rows ? (size_t)vg_shape_num_elements(&q->shapes[c]) * vg_dtype_size(types[c])
                                  : sizeof(vg_tensor *);
    return q;
oom:
    VG_OOM(st, "queue");
    queue_destroy(q);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* kernels */

static vg_code kernel_queue(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_op *op = vg__kctx_op(ctx);
    const char *shared;
    size_t slen;
    void *r;
    vg_code rc = vg__kctx_op_resource(ctx, "queue:", INT_MAX, &queue_resource_ops, queue_create, &r, &shared, &slen);
    if (rc != VG_OK) return rc;
    vg__queue *q = r;
    if (slen > 0) { /* shared: the queue must be the one this node describes */
        const vg_dtype *types;
        int n = 0;
        vg_op_attr_type_list(op, "component_types", &types, &n);
        int64_t cap = vg__attr_int_or(op, "capacity", -1);
        bool same = strcmp(q->op_type, vg_op_type(op)) == 0 && n == q->ncomp &&
                    memcmp(types, q->types, sizeof(vg_dtype) * (size_t)n) == 0 &&
                    (cap < 0 ? INT_MAX : cap) == q->capacity;
        if (!same)
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "Shared queue '%s' (%s, %d components, capacity %lld) does not match node '%s'",
                                 q->name, q->op_type, q->ncomp, (long long)q->capacity, vg_op_name(op));
    }
    return vg__kctx_output_handle(ctx, q);
}

static vg__queue *queue_of(vg__kctx *ctx) {
    return vg__kctx_handle_input(ctx, 0, "queue");
}

/* ValidateTuple / ValidateManyTuple: components, dtypes and shapes. *batch gets the
 * first dimension for EnqueueMany. */
static vg_code validate_tuple(vg__kctx *ctx, const vg__queue *q, bool many, int64_t *batch) {
    vg_status *st = vg__kctx_status(ctx);
    int n = vg__kctx_num_inputs(ctx) - 1;
    char a[160], b[160];
    if (n != q->ncomp)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Wrong number of components in tuple. Expected %d, got %d",
                             q->ncomp, n);
    *batch = 1;
    for (int c = 0; c < n; c++) {
        vg_tensor *t = vg__kctx_input(ctx, c + 1);
        if (vg_tensor_dtype(t) != q->types[c])
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Type mismatch in tuple component %d. Expected %s, got %s",
                                 c, vg_dtype_name(q->types[c]), vg_dtype_name(vg_tensor_dtype(t)));
        if (many && vg_tensor_ndims(t) < 1)
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "EnqueueMany requires components to have at least one dimension; component %d "
                                 "has shape %s",
                                 c, vg__tshape_str(t, a, sizeof a));
        if (many && c == 0) *batch = vg_tensor_dim(t, 0);
        if (q->padding) { /* the rank, and the dims the queue fixes */
            vg_shape want = q->shapes[c], got = vg_tensor_shape(t);
            int off = many ? 1 : 0;
            bool ok = got.ndims == want.ndims + off;
            for (int d = 0; ok && d < want.ndims; d++) ok = want.dims[d] < 0 || want.dims[d] == got.dims[d + off];
            if (!ok)
                return vg_status_set(st, VG_INVALID_ARGUMENT,
                                     "Shape mismatch in tuple component %d. Expected %s%s, got %s", c, many ? "[?]+" : "",
                                     vg_shape_str(&want, a, sizeof a), vg_shape_str(&got, b, sizeof b));
            if (many && vg_tensor_dim(t, 0) != *batch)
                return vg_status_set(st, VG_INVALID_ARGUMENT,
                                     "All input tensors must have the same size in the 0th dimension. Component %d has "
                                     "%lld, and should have %lld",
                                     c, (long long)vg_tensor_dim(t, 0), (long long)*batch);
        } else if (q->shapes) {
            vg_shape want = q->shapes[c], got = vg_tensor_shape(t);
            if (many) {
                if (want.ndims + 1 > VG_MAX_DIMS) return vg_status_set(st, VG_INVALID_ARGUMENT, "rank too large");
                memmove(want.dims + 1, want.dims, sizeof(int64_t) * (size_t)want.ndims);
                want.dims[0] = *batch;
                want.ndims++;
            }
            if (want.ndims != got.ndims || memcmp(want.dims, got.dims, sizeof(int64_t) * (size_t)got.ndims) != 0)
                return vg_status_set(st, VG_INVALID_ARGUMENT,
                                     "Shape mismatch in tuple component %d. Expected %s, got %s", c,
                                     vg_shape_str(&want, a, sizeof a), vg_shape_str(&got, b, sizeof b));
        } else if (many && vg_tensor_dim(t, 0) != *batch) {
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "All input tensors must have the same size in the 0th dimension. Component %d has "
                                 "%lld, and should have %lld",
                                 c, (long long)vg_tensor_dim(t, 0), (long long)*batch);
        }
    }
    return VG_OK;
}

/* Stacks n element tensors (all of shape `shape`) into out rows. */
static vg_code stack_rows(vg_tensor *out, vg_tensor *const *elems, int64_t n, vg_status *st) {
    vg_dtype dt = vg_tensor_dtype(out);
    int64_t per = n ? vg_tensor_num_elements(out) / n : 0;
    for (int64_t k = 0; k < n; k++) {
        if (vg_tensor_num_elements(elems[k]) != per)
            return vg_status_set(st, VG_INTERNAL, "queue element %lld has the wrong size", (long long)k);
        if (dt != VG_STRING) {
            size_t rb = (size_t)per * vg_dtype_size(dt);
            if (rb) memcpy((uint8_t *)vg_tensor_data(out) + (size_t)k * rb, vg_tensor_data(elems[k]), rb);
            continue;
        }
        for (int64_t j = 0; j < per; j++) {
            size_t len;
            const char *s = vg_tensor_string(elems[k], j, &len);
            if (vg_tensor_set_string(out, k * per + j, s, len, st) != VG_OK) return st->code;
        }
    }
    return VG_OK;
}

static vg_code enqueue_impl(vg__kctx *ctx, bool many) {
    vg_status *st = vg__kctx_status(ctx);
    vg__queue *q = queue_of(ctx);
    if (!q) return st->code;
    int64_t n = 0;
    vg_code rc = validate_tuple(ctx, q, many, &n);
    if (rc != VG_OK || n == 0) return rc;
    int nc = q->ncomp;
    uint8_t *src_local[16], **src = nc <= 16 ? src_local : vg__calloc((size_t)nc, sizeof(uint8_t *));
    if (!src) return VG_OOM(st, "enqueue");
    int64_t done = 0;
    if (q->rows) {
        for (int c = 0; c < nc; c++) src[c] = vg_tensor_data(vg__kctx_input(ctx, c + 1));
        rc = q_enqueue(q, src, n, vg__kctx_deadline_ns(ctx), &done, st);
    } else {
        /* Element mode: private copies, made before taking the queue lock. */
        for (int c = 0; c < nc; c++) src[c] = NULL;
        for (int c = 0; c < nc && rc == VG_OK; c++) {
            vg_tensor **el = vg__calloc((size_t)n, sizeof(vg_tensor *));
            src[c] = (uint8_t *)el;
            if (!el) rc = VG_OOM(st, "enqueue");
            const vg_tensor *in = vg__kctx_input(ctx, c + 1);
            for (int64_t k = 0; el && k < n && rc == VG_OK; k++) {
                el[k] = many ? vg__tensor_row(in, k, st) : vg_tensor_copy(in, st);
                if (!el[k]) rc = st->code ? st->code : VG_RESOURCE_EXHAUSTED;
            }
        }
        if (rc == VG_OK) rc = q_enqueue(q, src, n, vg__kctx_deadline_ns(ctx), &done, st);
        for (int c = 0; c < nc; c++) {
            vg_tensor **el = (vg_tensor **)src[c];
            for (int64_t k = done; el && k < n; k++) vg_tensor_free(el[k]);
            vg__free(el);
        }
    }
    if (src != src_local) vg__free(src);
    return rc;
}

static vg_code kernel_enqueue(vg__kctx *ctx) { return enqueue_impl(ctx, false); }
static vg_code kernel_enqueue_many(vg__kctx *ctx) { return enqueue_impl(ctx, true); }

enum { DQ_ONE, DQ_MANY, DQ_UPTO };

/* PaddingFIFOQueue: output c = the n elements stacked, each padded (zeros, "") to the
 * largest size of every dim in the batch. */
static vg_code pad_stack(vg__kctx *ctx, int c, vg_dtype dt, vg_tensor *const *el, int64_t n) {
    vg_status *st = vg__kctx_status(ctx);
    int r = vg_tensor_ndims(el[0]);
    int64_t dims[VG_MAX_DIMS + 1] = {n}, str[VG_MAX_DIMS + 1];
    if (r + 1 > VG_MAX_DIMS) return vg_status_set(st, VG_INVALID_ARGUMENT, "dequeued rank too large");
    for (int d = 0; d < r; d++) dims[d + 1] = 0;
    for (int64_t k = 0; k < n; k++)
        for (int d = 0; d < r; d++)
            if (vg_tensor_dim(el[k], d) > dims[d + 1]) dims[d + 1] = vg_tensor_dim(el[k], d);
    vg_tensor *o;
    vg_code rc = vg__kctx_alloc_output(ctx, c, dt, dims, r + 1, &o);
    if (rc != VG_OK) return rc;
    size_t esz = vg_dtype_size(dt);
    if (dt != VG_STRING && vg_tensor_nbytes(o)) memset(vg_tensor_data(o), 0, vg_tensor_nbytes(o));
    str[r] = 1;
    for (int d = r - 1; d >= 0; d--) str[d] = str[d + 1] * dims[d + 1];
    int64_t per = str[0];
    for (int64_t k = 0; k < n; k++) {
        int64_t m = vg_tensor_num_elements(el[k]), idx[VG_MAX_DIMS] = {0};
        for (int64_t j = 0; j < m; j++) {
            int64_t off = k * per;
            for (int d = 0; d < r; d++) off += idx[d] * str[d + 1];
            if (dt == VG_STRING) {
                size_t len;
                const char *sv = vg_tensor_string(el[k], j, &len);
                if ((rc = vg_tensor_set_string(o, off, sv, len, st)) != VG_OK) return rc;
            } else {
                memcpy((uint8_t *)vg_tensor_data(o) + (size_t)off * esz, (const uint8_t *)vg_tensor_data(el[k]) + (size_t)j * esz,
                       esz);
            }
            for (int d = r - 1; d >= 0; d--) {
                if (++idx[d] < vg_tensor_dim(el[k], d)) break;
                idx[d] = 0;
            }
        }
    }
    return VG_OK;
}

/* Output c for n elements: the component's shape, with [n] in front for DQ_MANY/UPTO. */
static vg_code alloc_component(vg__kctx *ctx, const vg__queue *q, int c, int mode, int64_t n, vg_tensor **out) {
    int64_t dims[VG_MAX_DIMS + 1];
    int nd = 0;
    if (mode != DQ_ONE) dims[nd++] = n;
    const vg_shape *s = &q->shapes[c];
    if (nd + s->ndims > VG_MAX_DIMS)
        return vg_status_set(vg__kctx_status(ctx), VG_INVALID_ARGUMENT, "dequeued rank too large");
    for (int i = 0; i < s->ndims; i++) dims[nd++] = s->dims[i] < 0 ? 0 : s->dims[i];
    return vg__kctx_alloc_output(ctx, c, q->types[c], dims, nd, out);
}

static vg_code dequeue_impl(vg__kctx *ctx, int mode) {
    vg_status *st = vg__kctx_status(ctx);
    vg__queue *q = queue_of(ctx);
    if (!q) return st->code;
    int64_t n = 1;
    if (mode != DQ_ONE) {
        vg_tensor *nt = vg__kctx_input(ctx, 1);
        n = (int64_t)vg_tensor_scalar(nt);
        if (n < 0)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s requested %lld < 0 elements",
                                 mode == DQ_MANY ? "DequeueManyOp" : "DequeueUpToOp", (long long)n);
        if (!q->shapes)
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "%s's DequeueMany and DequeueUpTo require the components to have specified shapes.",
                                 q->kind);
    }
    int nc = q->ncomp;
    vg_tensor *out_local[16], **outs = nc <= 16 ? out_local : vg__calloc((size_t)nc, sizeof(vg_tensor *));
    uint8_t *dst_local[16], **dst = nc <= 16 ? dst_local : vg__calloc((size_t)nc, sizeof(uint8_t *));
    vg_code rc = VG_OK;
    if (!outs || !dst) {
        rc = VG_OOM(st, "dequeue");
        goto done;
    }
    for (int c = 0; c < nc; c++) outs[c] = NULL, dst[c] = NULL;
    if (mode != DQ_ONE && n == 0) {
        for (int c = 0; c < nc && rc == VG_OK; c++) rc = alloc_component(ctx, q, c, mode, 0, &outs[c]);
        goto done;
    }
    /* Destination rows: the outputs themselves, or element pointer arrays. */
    for (int c = 0; c < nc && rc == VG_OK; c++) {
        if (q->rows) {
            rc = alloc_component(ctx, q, c, mode, n, &outs[c]);
            if (rc == VG_OK) dst[c] = vg_tensor_data(outs[c]);
        } else if (!(dst[c] = vg__calloc((size_t)n, sizeof(vg_tensor *)))) {
            rc = VG_OOM(st, "dequeue");
        }
    }
    int64_t got = 0;
    if (rc == VG_OK) rc = q_dequeue(q, dst, n, mode == DQ_UPTO, vg__kctx_deadline_ns(ctx), &got, st);
    if (rc == VG_OK && got < n) {
        /* DequeueUpTo on a closed queue: fewer rows than allocated. */
        for (int c = 0; c < nc && rc == VG_OK && q->rows; c++) {
            vg_tensor *big = vg_tensor_ref(outs[c]), *small;
            rc = alloc_component(ctx, q, c, mode, got, &small);
            if (rc == VG_OK && got) memcpy(vg_tensor_data(small), vg_tensor_data(big), (size_t)got * q->row_bytes[c]);
            vg_tensor_free(big);
        }
    }
    if (!q->rows) {
        for (int c = 0; c < nc; c++) {
            vg_tensor **el = (vg_tensor **)dst[c];
            if (!el) continue;
            if (rc == VG_OK && mode == DQ_ONE) {
                vg__kctx_set_output(ctx, c, el[0]);
                el[0] = NULL;
            } else if (rc == VG_OK && q->padding && got > 0) {
                rc = pad_stack(ctx, c, q->types[c], el, got);
            } else if (rc == VG_OK) {
                vg_tensor *o;
                rc = alloc_component(ctx, q, c, mode, got, &o);
                if (rc == VG_OK) rc = stack_rows(o, el, got, st);
            }
            for (int64_t k = 0; k < got; k++) vg_tensor_free(el[k]);
            vg__free(el);
        }
    }
done:
    if (outs != out_local) vg__free(outs);
    if (dst != dst_local) vg__free(dst);
    return rc;
}

static vg_code kernel_dequeue(vg__kctx *ctx) { return dequeue_impl(ctx, DQ_ONE); }
static vg_code kernel_dequeue_many(vg__kctx *ctx) { return dequeue_impl(ctx, DQ_MANY); }
static vg_code kernel_dequeue_up_to(vg__kctx *ctx) { return dequeue_impl(ctx, DQ_UPTO); }

static vg_code kernel_close(vg__kctx *ctx) {
    vg__queue *q = queue_of(ctx);
    if (!q) return vg__kctx_status(ctx)->code;
    bool cancel = false;
    vg_op_attr_bool(vg__kctx_op(ctx), "cancel_pending_enqueues", &cancel);
    return q_close(q, cancel, vg__kctx_deadline_ns(ctx), vg__kctx_status(ctx));
}

static vg_code kernel_size(vg__kctx *ctx) {
    vg__queue *q = queue_of(ctx);
    if (!q) return vg__kctx_status(ctx)->code;
    pthread_mutex_lock(&q->mu);
    int64_t n = q->size;
    pthread_mutex_unlock(&q->mu);
    return vg__kctx_output_int_scalar(ctx, VG_INT32, n);
}

/* ------------------------------------------------------------------------ */
/* shape functions */

static vg_code shape_queue(vg_op *op, vg_status *st) {
    const vg_dtype *types;
    const vg_shape *shapes;
    int n = 0, ns = 0;
    if (!vg_op_attr_type_list(op, "component_types", &types, &n) || n < 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s needs at least one component type", vg_op_type(op));
    for (int i = 0; i < n; i++)
        if (vg_dtype_size(types[i]) == 0 && types[i] != VG_STRING)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: component %d has an invalid dtype", vg_op_type(op), i);
    if (vg_op_attr_shape_list(op, "shapes", &shapes, &ns) && ns > 0) {
        if (ns != n)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: %d shapes for %d component types", vg_op_type(op), ns,
                                 n);
        bool pad = strcmp(vg_op_type(op), "PaddingFIFOQueueV2") == 0;
        for (int i = 0; i < ns; i++) {
            char buf[128];
            if (pad ? shapes[i].ndims < 0 : !vg_shape_is_fully_defined(&shapes[i]))
                return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: shape %s of component %d is not fully defined",
                                     vg_op_type(op), vg_shape_str(&shapes[i], buf, sizeof buf), i);
        }
    } else if (strcmp(vg_op_type(op), "PaddingFIFOQueueV2") == 0) {
        return vg_status_set(st, VG_INVALID_ARGUMENT, "PaddingFIFOQueue: shapes must be given (-1 for unknown dims)");
    } else {
        vg__attr a = {.name = "shapes", .type = VG_ATTR_SHAPE_LIST};
        if (!vg__op_put_attr(op, &a)) return VG_OOM(st, "attr");
    }
    vg__op_set_default_attr_int(op, "capacity", -1);
    vg__op_set_default_attr_string(op, "container", "");
    vg__op_set_default_attr_string(op, "shared_name", "");
    if (strcmp(vg_op_type(op), "RandomShuffleQueueV2") == 0) {
        vg__op_set_default_attr_int(op, "min_after_dequeue", 0);
        vg__op_default_seeds(op);
    }
    return vg__op_set_single_output(op, VG_RESOURCE, vg_shape_make(NULL, 0));
}

/* The queue op behind a handle input (NULL if the handle comes from elsewhere). */
static const vg_op *queue_producer(const vg_op *op) {
    vg_output h = vg_op_input(op, 0);
    if (!h.op) return NULL;
    const char *t = vg_op_type(h.op);
    return strcmp(t, "FIFOQueueV2") == 0 || strcmp(t, "RandomShuffleQueueV2") == 0 ||
                   strcmp(t, "PaddingFIFOQueueV2") == 0
               ? h.op
               : NULL;
}

static vg_code check_handle(vg_op *op, vg_status *st) { return vg__op_need_handle(op, "queue", st); }

/* The queue's component types and shapes (shapes NULL when unspecified). */
static vg_code queue_components(vg_op *op, const vg_dtype **types, int *n, const vg_shape **shapes, vg_status *st) {
    const vg_op *q = queue_producer(op);
    int ns = 0;
    *shapes = NULL;
    if (q) {
        vg_op_attr_type_list(q, "component_types", types, n);
        if (vg_op_attr_shape_list(q, "shapes", shapes, &ns) && ns != *n) *shapes = NULL;
        return VG_OK;
    }
    if (!vg_op_attr_type_list(op, "component_types", types, n) || *n < 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: the queue handle does not come from a queue op; set "
                             "'component_types'", vg_op_type(op));
    return VG_OK;
}

static vg_code shape_enqueue(vg_op *op, vg_status *st, bool many) {
    vg_code rc = check_handle(op, st);
    if (rc) return rc;
    int n = vg_op_num_inputs(op) - 1;
    vg_dtype tl[64];
    if (n > 64) return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: too many components", vg_op_type(op));
    for (int i = 0; i < n; i++) tl[i] = vg__op_input_dtype(op, i + 1);
    if (vg_op_attr_type(op, "Tcomponents") == VG_ATTR_NONE) {
        vg__attr a = {.name = "Tcomponents", .type = VG_ATTR_TYPE_LIST};
        a.u.list.p = tl;
        a.u.list.n = n;
        if (!vg__op_put_attr(op, &a)) return VG_OOM(st, "attr");
    }
    vg__op_set_default_attr_int(op, "timeout_ms", -1);
    const vg_op *q = queue_producer(op);
    if (q) {
        /* Python's QueueBase.enqueue checks these at graph-building time. */
        const vg_dtype *types;
        const vg_shape *shapes;
        int nt = 0, ns = 0;
        vg_op_attr_type_list(q, "component_types", &types, &nt);
        if (nt != n)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: queue '%s' has %d components, got %d", vg_op_type(op),
                                 vg_op_name(q), nt, n);
        for (int i = 0; i < n; i++)
            if (types[i] != tl[i])
                return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: component %d of queue '%s' is %s, got %s",
                                     vg_op_type(op), i, vg_op_name(q), vg_dtype_name(types[i]), vg_dtype_name(tl[i]));
        if (vg_op_attr_shape_list(q, "shapes", &shapes, &ns) && ns == n) {
            for (int i = 0; i < n; i++) {
                vg_shape got = vg__op_input_shape(op, i + 1), want = shapes[i];
                char a[128], b[128];
                if (got.ndims < 0) continue;
                int off = many ? 1 : 0;
                bool ok = got.ndims == want.ndims + off;
                for (int d = 0; ok && d < want.ndims; d++)
                    ok = got.dims[d + off] < 0 || want.dims[d] < 0 || got.dims[d + off] == want.dims[d];
                if (!ok)
                    return vg_status_set(st, VG_INVALID_ARGUMENT,
                                         "%s: shape %s of component %d is not compatible with the queue's %s%s",
                                         vg_op_type(op), vg_shape_str(&got, a, sizeof a), i,
                                         many ? "[?]+" : "", vg_shape_str(&want, b, sizeof b));
            }
        }
    }
    return vg__op_set_no_outputs(op);
}

static vg_code shape_enqueue_one(vg_op *op, vg_status *st) { return shape_enqueue(op, st, false); }
static vg_code shape_enqueue_many(vg_op *op, vg_status *st) { return shape_enqueue(op, st, true); }

static vg_code shape_dequeue_impl(vg_op *op, vg_status *st, int mode) {
    vg_code rc = check_handle(op, st);
    if (rc) return rc;
    const vg_dtype *types;
    const vg_shape *shapes;
    int n = 0;
    if ((rc = queue_components(op, &types, &n, &shapes, st)) != VG_OK) return rc;
    int64_t batch = -1;
    if (mode != DQ_ONE) {
        vg_dtype nt = vg__op_input_dtype(op, 1);
        if (nt != VG_INT32)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: n must be int32, got %s", vg_op_type(op),
                                 vg_dtype_name(nt));
        const vg_tensor *c = vg__op_const_input(op, 1);
        if (c && mode == DQ_MANY) batch = (int64_t)vg_tensor_scalar(c);
    }
    if (vg_op_attr_type(op, "component_types") == VG_ATTR_NONE) {
        vg__attr a = {.name = "component_types", .type = VG_ATTR_TYPE_LIST};
        a.u.list.p = (void *)types;
        a.u.list.n = n;
        if (!vg__op_put_attr(op, &a)) return VG_OOM(st, "attr");
    }
    vg__op_set_default_attr_int(op, "timeout_ms", -1);
    vg__op_set_num_outputs(op, n);
    for (int i = 0; i < n; i++) {
        vg_shape s = shapes ? shapes[i] : vg_shape_unknown();
        if (mode != DQ_ONE && s.ndims >= 0 && s.ndims < VG_MAX_DIMS) {
            memmove(s.dims + 1, s.dims, sizeof(int64_t) * (size_t)s.ndims);
            s.dims[0] = batch;
            s.ndims++;
        } else if (mode != DQ_ONE) {
            s = vg_shape_unknown();
        }
        vg__op_set_output(op, i, types[i], s);
    }
    return VG_OK;
}

static vg_code shape_dequeue(vg_op *op, vg_status *st) { return shape_dequeue_impl(op, st, DQ_ONE); }
static vg_code shape_dequeue_many(vg_op *op, vg_status *st) { return shape_dequeue_impl(op, st, DQ_MANY); }
static vg_code shape_dequeue_up_to(vg_op *op, vg_status *st) { return shape_dequeue_impl(op, st, DQ_UPTO); }

static vg_code shape_close(vg_op *op, vg_status *st) {
    vg_code rc = check_handle(op, st);
    if (rc) return rc;
    vg__op_set_default_attr_bool(op, "cancel_pending_enqueues", false);
    return vg__op_set_no_outputs(op);
}

static vg_code shape_size(vg_op *op, vg_status *st) { return vg__shape_handle_scalar(op, "queue", VG_INT32, st); }

/* ------------------------------------------------------------------------ */
/* builders */

/* "<queue's last name component><suffix>", TF's default names ("fifo_queue_enqueue"). */
static const char *default_name(vg_output queue, const char *suffix, char *buf, size_t len) {
    const char *qn = queue.op ? vg_op_name(queue.op) : "queue";
    const char *slash = strrchr(qn, '/');
    snprintf(buf, len, "%s%s", slash ? slash + 1 : qn, suffix);
    return buf;
}

static vg_op_builder *build_queue(vg_graph *g, const char *type, const vg_dtype *types, const vg_shape *shapes, int n,
                                  int capacity, const char *name) {
    vg_op_builder *b = vg_op_builder_new(g, type, name);
    vg_op_builder_set_attr_type_list(b, "component_types", types, n);
    vg_op_builder_set_attr_shape_list(b, "shapes", shapes, shapes ? n : 0);
    vg_op_builder_set_attr_int(b, "capacity", capacity);
    vg_op_builder_set_attr_string(b, "container", "", 0);
    vg_op_builder_set_attr_string(b, "shared_name", "", 0);
    return b;
}

vg_output vg_fifo_queue(vg_graph *g, const vg_dtype *types, const vg_shape *shapes, int ncomponents, int capacity,
                        const char *name) {
    vg_op_builder *b = build_queue(g, "FIFOQueueV2", types, shapes, ncomponents, capacity, name ? name : "fifo_queue");
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_output vg_padding_fifo_queue(vg_graph *g, const vg_dtype *types, const vg_shape *shapes, int ncomponents,
                                int capacity, const char *name) {
    vg_op_builder *b = build_queue(g, "PaddingFIFOQueueV2", types, shapes, ncomponents, capacity,
                                   name ? name : "padding_fifo_queue");
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_output vg_random_shuffle_queue(vg_graph *g, const vg_dtype *types, const vg_shape *shapes, int ncomponents,
                                  int capacity, int min_after_dequeue, int64_t seed, int64_t seed2, const char *name) {
    vg_op_builder *b = build_queue(g, "RandomShuffleQueueV2", types, shapes, ncomponents, capacity,
                                   name ? name : "random_shuffle_queue");
    vg_op_builder_set_attr_int(b, "min_after_dequeue", min_after_dequeue);
    vg__builder_set_seeds(b, seed, seed2);
    return vg_out(vg_op_builder_finish(b), 0);
}

static vg_op *build_enqueue(vg_graph *g, const char *type, vg_output queue, const vg_output *components, int n,
                            const char *name, const char *suffix) {
    char nb[512];
    vg_op_builder *b =
        vg__builder_with_inputs(g, type, name, default_name(queue, suffix, nb, sizeof nb), (vg_output[]){queue}, 1);
    vg_op_builder_add_inputs(b, components, n);
    return vg_op_builder_finish(b);
}

vg_op *vg_queue_enqueue(vg_graph *g, vg_output queue, const vg_output *components, int n, const char *name) {
    return build_enqueue(g, "QueueEnqueueV2", queue, components, n, name, "_enqueue");
}

vg_op *vg_queue_enqueue_many(vg_graph *g, vg_output queue, const vg_output *components, int n, const char *name) {
    return build_enqueue(g, "QueueEnqueueManyV2", queue, components, n, name, "_EnqueueMany");
}

vg_op *vg_queue_dequeue(vg_graph *g, vg_output queue, const char *name) {
    char nb[512];
    vg_op_builder *b =
        vg_op_builder_new(g, "QueueDequeueV2", name ? name : default_name(queue, "_Dequeue", nb, sizeof nb));
    vg_op_builder_add_input(b, queue);
    return vg_op_builder_finish(b);
}

static vg_op *build_dequeue_n(vg_graph *g, const char *type, vg_output queue, vg_output n, const char *name,
                              const char *suffix) {
    char nb[512];
    vg_op_builder *b =
        vg__builder_with_inputs(g, type, name, default_name(queue, suffix, nb, sizeof nb), (vg_output[]){queue, n}, 2);
    return vg_op_builder_finish(b);
}

vg_op *vg_queue_dequeue_many(vg_graph *g, vg_output queue, vg_output n, const char *name) {
    return build_dequeue_n(g, "QueueDequeueManyV2", queue, n, name, "_DequeueMany");
}

vg_op *vg_queue_dequeue_up_to(vg_graph *g, vg_output queue, vg_output n, const char *name) {
    return build_dequeue_n(g, "QueueDequeueUpToV2", queue, n, name, "_DequeueUpTo");
}

vg_op *vg_queue_close(vg_graph *g, vg_output queue, bool cancel_pending_enqueues, const char *name) {
    char nb[512];
    vg_op_builder *b = vg__builder_with_inputs(g, "QueueCloseV2", name, default_name(queue, "_Close", nb, sizeof nb),
                                               (vg_output[]){queue}, 1);
    vg_op_builder_set_attr_bool(b, "cancel_pending_enqueues", cancel_pending_enqueues);
    return vg_op_builder_finish(b);
}

vg_output vg_queue_size(vg_graph *g, vg_output queue, const char *name) {
    char nb[512];
    return vg__build_simple(g, "QueueSizeV2", name, default_name(queue, "_Size", nb, sizeof nb), (vg_output[]){queue},
                            1);
}

/* ------------------------------------------------------------------------ */

const vg__op_def vg__ops_queue[] = {
    {"FIFOQueueV2", 0, 0, QUEUE_FLAGS, 0, shape_queue, kernel_queue, NULL},
    {"RandomShuffleQueueV2", 0, 0, QUEUE_FLAGS, 0, shape_queue, kernel_queue, NULL},
    {"PaddingFIFOQueueV2", 0, 0, QUEUE_FLAGS, 0, shape_queue, kernel_queue, NULL},
    {"QueueEnqueueV2", 2, -1, QUEUE_FLAGS, 0, shape_enqueue_one, kernel_enqueue, NULL},
    {"QueueEnqueueManyV2", 2, -1, QUEUE_FLAGS, 0, shape_enqueue_many, kernel_enqueue_many, NULL},
    {"QueueDequeueV2", 1, 1, QUEUE_FLAGS, 0, shape_dequeue, kernel_dequeue, NULL},
    {"QueueDequeueManyV2", 2, 2, QUEUE_FLAGS, 0, shape_dequeue_many, kernel_dequeue_many, NULL},
    {"QueueDequeueUpToV2", 2, 2, QUEUE_FLAGS, 0, shape_dequeue_up_to, kernel_dequeue_up_to, NULL},
    {"QueueCloseV2", 1, 1, QUEUE_FLAGS, 0, shape_close, kernel_close, NULL},
    {"QueueSizeV2", 1, 1, QUEUE_FLAGS, 0, shape_size, kernel_size, NULL},
    {0},
};

/* ------------------------------------------------------------------------ */
/* for the reader ops (queue_internal.h) */

vg_code vg__queue_dequeue_string(const vg_tensor *handle, int64_t deadline, vg_tensor **out, vg_status *st) {
    *out = NULL;
    if (!handle || vg_tensor_dtype(handle) != VG_RESOURCE || vg_tensor_num_elements(handle) != 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "expected a queue handle");
    vg__queue *q;
    memcpy(&q, vg_tensor_data(handle), sizeof q);
    if (!q || q->ncomp != 1 || q->types[0] != VG_STRING || q->rows)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "a reader needs a queue of string work items");
    vg_tensor *t = NULL;
    uint8_t *dst[1] = {(uint8_t *)&t};
    int64_t got = 0;
    vg_code rc = q_dequeue(q, dst, 1, false, deadline, &got, st);
    if (rc != VG_OK) return rc;
    if (got == 1 && t && vg_tensor_num_elements(t) != 1) {
        vg_tensor_free(t);
        return vg_status_set(st, VG_INVALID_ARGUMENT, "a reader's work item must be a string scalar");
    }
    *out = t;
    return VG_OK;
}
