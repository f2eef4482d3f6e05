/*
 * comm.c - the MPI world and its communication thread (see comm.h).
 *
 * One MPI caller at a time, in submission order (MPI_THREAD_SERIALIZED). A request
 * submitted while MPI is idle (nothing queued, nobody inside MPI) runs on the
 * submitting thread itself, in vg__comm_wait: no hand-off to another thread and back
 * (two wake-ups, 10-50 us each on a VM). Any other request goes into a FIFO that the
 * communication thread works through. A waiter that may be cancelled first enters an
 * MPI_Ibarrier and polls it (with the cancellation and the deadline): once every rank
 * has entered the barrier every rank is inside this same collective, so the blocking
 * call after it cannot wait on a peer that never comes; a cancelled waiter hands the
 * barrier and the request to the communication thread, which finishes both, so the
 * ranks stay in step as before. A request that fails marks the world broken (MPI has
 * no fault tolerance in Open MPI 4.1: a dead peer ends the job, and until mpirun kills us every later request fails with
 * UNAVAILABLE instead of hanging). Without VIGIL_HAVE_MPI, or when the process was not
 * started by mpirun, the world has one rank and requests complete on the caller.
 */
#include "dist/comm.h"
#include "core/half.h"
#include "dist/heartbeat.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>
#ifdef VIGIL_HAVE_MPI
#include <mpi.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>
#endif

struct vg__comm_req {
    vg__comm_kind kind;
    void *buf;
    int64_t count;
    vg_dtype dt;
    vg_reduce_op op;
    int root;
    int refs; /* under g.mu */
    bool done;
    vg_code code;
    char msg[200];
    void *owned;          /* freed through vg__comm_buffer_put at the last reference */
    const void *sendbuf;  /* ALLREDUCE not in place */
    vg_tensor **held;
    int nheld, capheld;
    vg__comm_part *parts;  /* ALLREDUCE in parts (then buf/count/sendbuf are unused) */
    int nparts, capparts;
    void *gathered;       /* ALLGATHER result (vg__malloc) */
    int64_t *counts;      /* ALLGATHER per-rank byte counts */
    int64_t total;
    int mismatch;         /* CHECK; RECV: the sender (-1: no message) */
    int tag;              /* SEND / RECV: the caller's tag */
    bool wait;            /* RECV: wait (with the collective timeout) for a message */
    bool direct;          /* runs on the submitting thread (holds g.busy until done) */
    bool queue_only;      /* never direct */
    bool fp16;            /* FUSED float32: IEEE half on the wire (ring paths) */
    bool hier;            /* FUSED: hierarchical when the world spans several nodes */
#ifdef VIGIL_HAVE_MPI
    MPI_Request barrier;  /* the entry barrier of a direct request handed to the thread */
    bool has_barrier;
    uint64_t shm_seq;     /* FUSED on shared memory: its sequence number once started */
    int shm_stage;        /* 1: arrived, waiting for the peers; 2: own chunk reduced */
#endif
    vg__comm_req *next;
};

enum { ST_NONE, ST_UP, ST_DOWN };

static struct {
    int state;
    bool mpi;               /* MPI was started by us */
    bool thread_up, stop, broken, busy;
    char broken_msg[160];
    int rank, size, local_rank, local_size;
    pthread_t thread;
    vg__comm_req *head, *tail;
    void *bufs[4];          /* reusable buffers */
    int64_t timeout_ms;     /* the collective timeout (vg_dist_set_collective_timeout_ms); 0 = none */
    bool timeout_set;       /* by the setter: VIGIL_COLLECTIVE_TIMEOUT_MS no longer applies */
    int64_t hb_timeout_ms;  /* heartbeats (heartbeat.h): a peer silent this long is gone; 0 = off */
    bool hb_timeout_set;    /* by the setter: VIGIL_HEARTBEAT_TIMEOUT_MS no longer applies */
    char (*hosts)[64];      /* every rank's MPI_Get_processor_name (size entries) */
#ifdef VIGIL_HAVE_MPI
    MPI_Comm comm;
    bool have_comm;
    /* point-to-point sends not yet received (vg_dist_send): touched only by the one
     * MPI caller */
    MPI_Request *psend;
    void **pbuf;
    int *pdest;
    int npend, cappend;
#endif
} g = {.timeout_ms = VG_DIST_COLLECTIVE_TIMEOUT_MS_DEFAULT,
       .hb_timeout_ms = VG_DIST_HEARTBEAT_TIMEOUT_MS_DEFAULT}; /* size and local_size 0 read as 1 */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER; /* queue non-empty / request done */

bool vg_dist_mpi_built(void) {
#ifdef VIGIL_HAVE_MPI
    return true;
#else
    return false;
#endif
}

/* The launcher's environment: the variable that says we run under mpirun, or NULL. */
static const char *launcher_var(void) {
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK",
                                       "MPI_LOCALNRANKS"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i])) return vars[i];
    return NULL;
}

/* ---- buffers ---------------------------------------------------------------- */

typedef struct {
    size_t cap;
    size_t pad[7]; /* keeps data 64-byte aligned relative to the block */
} buf_hdr;

void *vg__comm_buffer_get(size_t bytes) {
    pthread_mutex_lock(&g_mu);
    int best = -1;
    for (int i = 0; i < 4; i++) {
        if (!g.bufs[i]) continue;
        buf_hdr *h = (buf_hdr *)g.bufs[i] - 1;
        if (h->cap >= bytes && (best < 0 || h->cap < ((buf_hdr *)g.bufs[best] - 1)->cap)) best = i;
    }
    void *p = NULL;
    if (best >= 0) {
        p = g.bufs[best];
        g.bufs[best] = NULL;
    }
    pthread_mutex_unlock(&g_mu);
    if (p) return p;
    buf_hdr *h = vg__aligned_alloc(sizeof(buf_hdr) + (bytes ? bytes : 1), 64);
    if (!h) return NULL;
    h->cap = bytes;
    return h + 1;
}

void vg__comm_buffer_put(void *p) {
    if (!p) return;
    buf_hdr *h = (buf_hdr *)p - 1;
    pthread_mutex_lock(&g_mu);
    for (int i = 0; i < 4; i++) {
        if (!g.bufs[i]) {
            g.bufs[i] = p;
            pthread_mutex_unlock(&g_mu);
            return;
        }
    }
    /* full: keep the larger ones */
    int small = 0;
    for (int i = 1; i < 4; i++)
        if (((buf_hdr *)g.bufs[i] - 1)->cap < ((buf_hdr *)g.bufs[small] - 1)->cap) small = i;
    if (((buf_hdr *)g.bufs[small] - 1)->cap < h->cap) {
        void *old = g.bufs[small];
        g.bufs[small] = p;
        h = (buf_hdr *)old - 1;
    }
    pthread_mutex_unlock(&g_mu);
    vg__free(h);
}

static void buffers_drop(void) {
    for (int i = 0; i < 4; i++) {
        if (g.bufs[i]) vg__free((buf_hdr *)g.bufs[i] - 1);
        g.bufs[i] = NULL;
    }
}

/* ---- requests ---------------------------------------------------------------- */

vg__comm_req *vg__comm_req_new(vg__comm_kind kind, void *buf, int64_t count, vg_dtype dt, vg_reduce_op op,
                               int root) {
    vg__comm_req *r = vg__calloc(1, sizeof *r);
    if (!r) return NULL;
    r->kind = kind;
    r->buf = buf;
    r->count = count;
    r->dt = dt;
    r->op = op;
    r->root = root;
    r->refs = 1;
    r->mismatch = -1;
    return r;
}

void vg__comm_req_own(vg__comm_req *r, void *p) { r->owned = p; }
void vg__comm_req_queue_only(vg__comm_req *r) { r->queue_only = true; }
void vg__comm_req_set_send(vg__comm_req *r, const void *sendbuf) { r->sendbuf = sendbuf; }
void vg__comm_req_set_wire(vg__comm_req *r, bool fp16, bool hierarchical) {
    r->fp16 = fp16;
    r->hier = hierarchical;
}
/* p with room for `need` elements (capacity *cap, doubled as needed): p itself, or
 * the moved array; NULL when out of memory (p is then unchanged). */
static void *grow(void *p, int *cap, int need, size_t elem) {
    if (need <= *cap) return p;
    int c = *cap ? 2 * *cap : 4;
    while (c < need) c *= 2;
    void *q = vg__realloc(p, (size_t)*cap * elem, (size_t)c * elem);
    if (q) *cap = c;
    return q;
}

bool vg__comm_req_hold(vg__comm_req *r, vg_tensor *t) {
    vg_tensor **h = grow(r->held, &r->capheld, r->nheld + 1, sizeof *h);
    if (!h) return false;
    r->held = h;
    r->held[r->nheld++] = vg_tensor_ref(t);
    return true;
}

bool vg__comm_req_add_part(vg__comm_req *r, const void *sendbuf, void *recvbuf, int64_t count, bool scale) {
    vg__comm_part *q = grow(r->parts, &r->capparts, r->nparts + 1, sizeof *q);
    if (!q) return false;
    r->parts = q;
    r->parts[r->nparts++] = (vg__comm_part){sendbuf, recvbuf, count, scale};
    return true;
}

const void *vg__comm_req_gathered(const vg__comm_req *r, const int64_t **counts, int64_t *total) {
    if (counts) *counts = r->counts;
    if (total) *total = r->total;
    return r->gathered;
}

int vg__comm_req_check_mismatch(const vg__comm_req *r) { return r->mismatch; }

static void req_destroy(vg__comm_req *r) {
    if (r->kind == VG__COMM_SEND) vg__free(r->buf); /* a copy, unless MPI took it */
    vg__comm_buffer_put(r->owned);
    for (int i = 0; i < r->nheld; i++) vg_tensor_free(r->held[i]);
    vg__free(r->held);
    vg__free(r->parts);
    vg__free(r->gathered);
    vg__free(r->counts);
    vg__free(r);
}

#ifdef VIGIL_HAVE_MPI
static void hand_over_locked(vg__comm_req *r);
#endif

void vg__comm_req_free(vg__comm_req *r) {
    if (!r) return;
    pthread_mutex_lock(&g_mu);
#ifdef VIGIL_HAVE_MPI
    if (r->direct && !r->done) hand_over_locked(r); /* submitted, never waited for */
#endif
    bool last = --r->refs == 0;
    pthread_mutex_unlock(&g_mu);
    if (last) req_destroy(r);
}

static void req_fail(vg__comm_req *r, vg_code code, const char *msg) {
    r->code = code;
    snprintf(r->msg, sizeof r->msg, "%s", msg);
}

/* ---- executing a request ------------------------------------------------------ */

static size_t dt_size(vg_dtype dt) {
    switch (dt) {
    case VG_FLOAT: case VG_INT32: return 4;
    case VG_DOUBLE: case VG_INT64: return 8;
    default: return 0;
    }
}

#ifdef VIGIL_HAVE_MPI
/* x *= 1 / size over a part's result (the mean's division, float types). */
static void scale_part(void *p, int64_t n, vg_dtype dt, int size) {
    int64_t i = 0;
    if (dt == VG_FLOAT) {
        float *restrict f = p;
        const float k = 1.0f / (float)size;
        for (; i + 16 <= n; i += 16)
            for (int j = 0; j < 16; j++) f[i + j] *= k;
        for (; i < n; i++) f[i] *= k;
    } else if (dt == VG_DOUBLE) {
        double *restrict f = p;
        const double k = 1.0 / size;
        for (; i + 16 <= n; i += 16)
            for (int j = 0; j < 16; j++) f[i + j] *= k;
        for (; i < n; i++) f[i] *= k;
    }
}
#endif

/* A world of one rank. */
static void exec_local(vg__comm_req *r) {
    r->code = VG_OK;
    if (r->kind == VG__COMM_SEND || r->kind == VG__COMM_RECV || r->kind == VG__COMM_FLUSH) {
        /* vg_dist_send / vg_dist_recv refuse a world of one rank before this */
        if (r->kind == VG__COMM_RECV && r->wait) req_fail(r, VG_FAILED_PRECONDITION, "no peer rank to receive from");
        return;
    }
    for (int i = 0; i < r->nparts; i++) {
        const vg__comm_part *q = &r->parts[i];
        if (q->send && q->send != q->recv && q->count > 0) memcpy(q->recv, q->send, (size_t)q->count * dt_size(r->dt));
    }
    if (r->kind == VG__COMM_ALLREDUCE && r->sendbuf && r->sendbuf != r->buf && r->count > 0)
        memcpy(r->buf, r->sendbuf, (size_t)r->count * dt_size(r->dt));
    if (r->kind == VG__COMM_ALLGATHER) {
        r->counts = vg__malloc(sizeof(int64_t));
        r->gathered = vg__malloc(r->count ? (size_t)r->count : 1);
        if (!r->counts || !r->gathered) {
            req_fail(r, VG_RESOURCE_EXHAUSTED, "out of memory allocating the gather result");
            return;
        }
        r->counts[0] = r->total = r->count;
        if (r->count) memcpy(r->gathered, r->buf, (size_t)r->count);
    }
}

#ifdef VIGIL_HAVE_MPI
static MPI_Datatype mpi_type(vg_dtype dt) {
    switch (dt) {
    case VG_FLOAT: return MPI_FLOAT;
    case VG_DOUBLE: return MPI_DOUBLE;
    case VG_INT32: return MPI_INT32_T;
    case VG_INT64: return MPI_INT64_T;
    default: return MPI_DATATYPE_NULL;
    }
}

static MPI_Op mpi_op(vg_reduce_op op) {
    switch (op) {
    case VG_REDUCE_PROD: return MPI_PROD;
    case VG_REDUCE_MIN: return MPI_MIN;
    case VG_REDUCE_MAX: return MPI_MAX;
    default: return MPI_SUM;
    }
}

static void pause_ns(int64_t ns);

static bool mpi_ok(vg__comm_req *r, int rc, const char *what) {
    if (rc == MPI_SUCCESS) return true;
    char es[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, es, &len);
    r->code = VG_UNAVAILABLE;
    snprintf(r->msg, sizeof r->msg, "%s failed: %.*s (a peer rank is gone or MPI failed)", what, len, es);
    return false;
}

/* ---- the collective timeout (issue 33) ------------------------------------------------
 * Every wait on peers polls (MPI_Test*) instead of blocking, and gives up when the
 * collective timeout passes without the request completing: across hosts a cut link
 * leaves TCP retransmitting for many minutes (tcp_retries2) and a receive from a peer
 * whose link is down never ends at all. The request then fails with DEADLINE_EXCEEDED
 * naming the peer this rank receives from in the ring (its left neighbour, rank - 1),
 * and the world is marked broken: the MPI requests stay pending, so the caller must
 * exit without MPI_Finalize (mpirun then ends the job). */

static int64_t timeout_ns_now(void) {
    pthread_mutex_lock(&g_mu);
    int64_t ms = g.timeout_ms;
    pthread_mutex_unlock(&g_mu);
    return ms > 0 ? ms * 1000000 : 0;
}

static void late_fail(vg__comm_req *r, const char *what, int64_t waited_ns) {
    int left = (g.rank + g.size - 1) % (g.size ? g.size : 1);
    r->code = VG_DEADLINE_EXCEEDED;
    snprintf(r->msg, sizeof r->msg,
             "%s: no progress for %.1f s (collective timeout) waiting on rank %d (host %s), the left neighbour in "
             "the ring: it, its link or a rank before it is down or too slow",
             what, (double)waited_ns / 1e9, left, g.hosts ? g.hosts[left] : "?");
}

/* The heartbeat check of a wait (heartbeat.h): true, with msg set, when a peer has been
 * silent for longer than the heartbeat timeout: its process or host is gone or the
 * link to it is cut, so no wait on it can end. Cheap (a few atomic loads). */
static bool peer_silent(char *msg, size_t len, const char *what) {
    int p = vg__hb_first_stale();
    if (p < 0) return false;
    snprintf(msg, len, "%s: no heartbeat from rank %d (host %s) for %.1f s: its process or host is gone, or the link "
             "to it is cut", what, p, g.hosts ? g.hosts[p] : "?", (double)vg__hb_age_ns(p) / 1e9);
    return true;
}

static bool silent_fail(vg__comm_req *r, const char *what) {
    if (!peer_silent(r->msg, sizeof r->msg, what)) return false;
    r->code = VG_UNAVAILABLE;
    return true;
}

static void p2p_late(vg__comm_req *r, const char *what, int peer, int64_t waited_ns);

/* One look of a polling wait at its clock: *t0 is when it began (0: now, and *tmo, the
 * collective timeout in ns or 0, is read then). False, r failed, when the timeout has
 * passed (late_fail, or p2p_late on peer for a point-to-point wait) or a peer went
 * silent after 100 ms; otherwise true with *waited the ns since *t0. */
static bool poll_in_time(vg__comm_req *r, const char *what, bool p2p, int peer, int64_t *t0, int64_t *tmo,
                         int64_t *waited) {
    int64_t now = vg__now_ns();
    if (!*t0) {
        *t0 = now;
        *tmo = timeout_ns_now();
    }
    int64_t el = *waited = now - *t0;
    if (*tmo > 0 && el >= *tmo) {
        if (p2p) p2p_late(r, what, peer, el);
        else late_fail(r, what, el);
        return false;
    }
    return !(el > 100000000 && silent_fail(r, what));
}

/* Waits for n requests: spins 50 us, then yields the core between polls, then sleeps
 * 1 ms between polls after 100 ms; fails (r->code) on an MPI error or the timeout. */
static bool poll_all(vg__comm_req *r, int n, MPI_Request *q, const char *what) {
    int64_t t0 = 0, tmo = 0;
    for (unsigned iter = 0;; iter++) {
        int flag = 0;
        if (!mpi_ok(r, MPI_Testall(n, q, &flag, MPI_STATUSES_IGNORE), what)) return false;
        if (flag) return true;
        if (iter % 64) continue;
        int64_t waited;
        if (!poll_in_time(r, what, false, 0, &t0, &tmo, &waited)) return false;
        if (waited > 100000000) pause_ns(1000000);
        else if (waited > 50000) sched_yield();
    }
}

/* A nonblocking MPI call (rc) then its wait, polled. */
static bool mpi_wait_ok(vg__comm_req *r, int rc, MPI_Request *q, const char *what) {
    return mpi_ok(r, rc, what) && poll_all(r, 1, q, what);
}

/* Large messages in chunks MPI's int counts can carry. */
#define CHUNK ((int64_t)1 << 30)

/* ---- the fused allreduce: a ring over MPI point-to-point ----------------------------
 *
 * VG__COMM_FUSED reduces many tensors (parts: input -> its slice of the fusion buffer)
 * with the ring algorithm (reduce-scatter, then allgather; Open MPI's own pick for
 * these sizes on two ranks does the same steps) written on MPI_Isend/Irecv, so that:
 * the first step sends straight from the inputs (no packing copy into the fusion
 * buffer: one message per tensor piece of the chunk), every receive lands in the
 * fusion buffer itself, and the add of this rank's own input is one pass that also
 * applies the mean's 1 / N in the last step (no separate pass). The buffer holds the
 * slices at 64-byte-aligned offsets; chunk c of N is [E c / N, E (c + 1) / N) of its
 * elements, rounded to cache lines. */

enum { RING_TAG = 7715 };

typedef struct {
    vg__comm_req *r;
    int64_t elems;         /* of the fusion buffer */
    size_t es;
    MPI_Datatype type;
    MPI_Request *reqs;
    int nreqs, capreqs;
    const vg__comm_part *parts; /* the inputs (r's parts, or one part for a leaders' ring) */
    int nparts;
    MPI_Comm comm;         /* the ring's ranks: the world, or one leader per node */
    int n, me;
    double k;              /* the mean's factor for parts that scale (1 / world size) */
} ring_state;

static int64_t chunk_lo(const ring_state *s, int c) {
    int64_t per_line = 64 / (int64_t)s->es;
    int64_t lo = s->elems * c / s->n;
    lo -= lo % per_line;
    return c == 0 ? 0 : lo;
}
static int64_t chunk_hi(const ring_state *s, int c) { return c == s->n - 1 ? s->elems : chunk_lo(s, c + 1); }

static bool ring_post_type(ring_state *s, bool send, void *p, int64_t n, int peer, MPI_Datatype type);
static bool ring_post(ring_state *s, bool send, void *p, int64_t n, int peer) {
    return ring_post_type(s, send, p, n, peer, s->type);
}
static bool ring_post_type(ring_state *s, bool send, void *p, int64_t n, int peer, MPI_Datatype type) {
    if (n <= 0) return true;
    MPI_Request *reqs = grow(s->reqs, &s->capreqs, s->nreqs + 1, sizeof *reqs);
    if (!reqs) {
        req_fail(s->r, VG_RESOURCE_EXHAUSTED, "out of memory in the fused allreduce");
        return false;
    }
    s->reqs = reqs;
    MPI_Request *q = &s->reqs[s->nreqs++];
    int rc = send ? MPI_Isend(p, (int)n, type, peer, RING_TAG, s->comm, q)
                  : MPI_Irecv(p, (int)n, type, peer, RING_TAG, s->comm, q);
    if (rc != MPI_SUCCESS) s->nreqs--;
    return mpi_ok(s->r, rc, send ? "MPI_Isend" : "MPI_Irecv");
}

static bool ring_wait(ring_state *s) {
    bool ok = poll_all(s->r, s->nreqs, s->reqs, "ring allreduce");
    s->nreqs = 0;
    return ok;
}

/* Where part q lies in the buffer: its elements [a, a + count); false when that misses
 * chunk [lo, hi), otherwise true with [x, y) the overlap. */
static bool part_overlap(const ring_state *s, const vg__comm_part *q, int64_t lo, int64_t hi, int64_t *a, int64_t *x,
                         int64_t *y) {
    *a = ((char *)q->recv - (char *)s->r->buf) / (int64_t)s->es;
    int64_t b = *a + q->count;
    if (b <= lo || *a >= hi) return false;
    *x = *a > lo ? *a : lo;
    *y = b < hi ? b : hi;
    return true;
}

/* The pieces of chunk [lo, hi) that are tensor data: part i's elements [a, b) of the
 * buffer, sent from its input (from_input) or from the buffer, or received into the
 * buffer. */
static bool ring_pieces(ring_state *s, int64_t lo, int64_t hi, bool send, bool from_input, int peer) {
    char *buf = s->r->buf;
    for (int i = 0; i < s->nparts; i++) {
        const vg__comm_part *q = &s->parts[i];
        int64_t a, x, y;
        if (!part_overlap(s, q, lo, hi, &a, &x, &y)) continue;
        void *p = from_input ? (void *)((const char *)q->send + (x - a) * (int64_t)s->es) : buf + x * (int64_t)s->es;
        if (!ring_post(s, send, p, y - x, peer)) return false;
    }
    return true;
}

/* d = (d + s) [* k]: 64-byte vectors (GCC's and clang's vector extension; -O2's
 * vectoriser left the plain loop scalar, 4x slower), cloned per ISA under GCC as
 * src/kernels/simd.h does. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__) && \
    !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define RING_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define RING_CLONES
#endif
typedef float ring_f32v __attribute__((vector_size(64)));
typedef double ring_f64v __attribute__((vector_size(64)));

/* One definition for both element types: NAME(d, s, n, k, scale) over T, W elements of
 * the 64-byte vector type VT at a time. */
#define RING_ADD_DEFINE(NAME, T, VT, W)                                                          \
    RING_CLONES static void NAME(T *restrict d, const T *restrict s, int64_t n, T k, bool scale) { \
        int64_t i = 0;                                                                           \
        for (; i + (W) <= n; i += (W)) {                                                         \
            VT a, b;                                                                             \
            memcpy(&a, d + i, sizeof a);                                                         \
            memcpy(&b, s + i, sizeof b);                                                         \
            a += b;                                                                              \
            if (scale) a *= k;                                                                   \
            memcpy(d + i, &a, sizeof a);                                                         \
        }                                                                                        \
        for (; i < n; i++) d[i] = scale ? (d[i] + s[i]) * k : d[i] + s[i];                       \
    }
RING_ADD_DEFINE(add_f32, float, ring_f32v, 16)
RING_ADD_DEFINE(add_f64, double, ring_f64v, 8)
#undef RING_ADD_DEFINE

/* buf[x] += input[x] over chunk [lo, hi), times k (the mean) in the parts that scale. */
static void ring_add(ring_state *s, int64_t lo, int64_t hi, double k) {
    vg__comm_req *r = s->r;
    char *buf = r->buf;
    for (int i = 0; i < s->nparts; i++) {
        const vg__comm_part *q = &s->parts[i];
        int64_t a, x, y;
        if (!part_overlap(s, q, lo, hi, &a, &x, &y)) continue;
        bool scale = q->scale && k != 1.0;
        if (r->dt == VG_FLOAT) add_f32((float *)buf + x, (const float *)q->send + (x - a), y - x, (float)k, scale);
        else add_f64((double *)buf + x, (const double *)q->send + (x - a), y - x, k, scale);
    }
}

/* Compression.fp16 on the ring: [lo, hi) of the inputs as half (padding: zeros). */
static void ring_inputs_half(const ring_state *s, int64_t lo, int64_t hi, uint16_t *h) {
    memset(h, 0, (size_t)(hi - lo) * sizeof *h);
    for (int i = 0; i < s->nparts; i++) {
        const vg__comm_part *q = &s->parts[i];
        int64_t a, x, y;
        if (!part_overlap(s, q, lo, hi, &a, &x, &y)) continue;
        vg__float_to_half_n((const float *)q->send + (x - a), h + (x - lo), (size_t)(y - x));
    }
}

/* The ring of s->n ranks over s->parts into r->buf. With fp16 (float32 only) every
 * message is the chunk as IEEE half (two staging buffers of one chunk): the receiver
 * widens it into the fusion buffer and adds its own float32 input, so each partial sum
 * is rounded to half once per hop; the owner of a finished chunk rounds it to half
 * too before the allgather, so every rank ends with the same values. */
static void ring_run(ring_state *s, bool fp16) {
    vg__comm_req *r = s->r;
    int n = s->n, me = s->me, right = (me + 1) % n, left = (me + n - 1) % n;
    /* zero the padding between slices: whole chunks travel in the later steps */
    char *buf = r->buf;
    int64_t end = 0;
    for (int i = 0; i <= s->nparts; i++) {
        int64_t a = i < s->nparts ? ((char *)s->parts[i].recv - buf) / (int64_t)s->es : s->elems;
        if (a > end) memset(buf + end * (int64_t)s->es, 0, (size_t)(a - end) * s->es);
        if (i < s->nparts) end = a + s->parts[i].count;
    }
    uint16_t *hs = NULL, *hr = NULL;
    if (fp16) {
        int64_t maxc = 0;
        for (int c = 0; c < n; c++)
            if (chunk_hi(s, c) - chunk_lo(s, c) > maxc) maxc = chunk_hi(s, c) - chunk_lo(s, c);
        hs = vg__malloc((size_t)(maxc ? maxc : 1) * 2 * sizeof *hs);
        if (!hs) {
            req_fail(r, VG_RESOURCE_EXHAUSTED, "out of memory for the fp16 staging buffers");
            return;
        }
        hr = hs + (maxc ? maxc : 1);
    }
    float *fb = (float *)buf;
    /* reduce-scatter: in step t, send chunk me - t, receive chunk me - t - 1 and add
     * this rank's input to it; rank me ends with the sum of chunk me + 1 */
    for (int t = 0; t < n - 1; t++) {
        int sc = (me - t + 2 * n) % n, rc = (me - t - 1 + 2 * n) % n;
        int64_t rlo = chunk_lo(s, rc), rhi = chunk_hi(s, rc), slo = chunk_lo(s, sc), shi = chunk_hi(s, sc);
        bool ok;
        if (fp16) {
            if (t == 0) ring_inputs_half(s, slo, shi, hs);
            else vg__float_to_half_n(fb + slo, hs, (size_t)(shi - slo));
            ok = ring_post_type(s, false, hr, rhi - rlo, left, MPI_UINT16_T) &&
                 ring_post_type(s, true, hs, shi - slo, right, MPI_UINT16_T);
        } else {
            ok = t == 0 ? ring_pieces(s, rlo, rhi, false, false, left) && ring_pieces(s, slo, shi, true, true, right)
                        : ring_post(s, false, buf + rlo * (int64_t)s->es, rhi - rlo, left) &&
                              ring_post(s, true, buf + slo * (int64_t)s->es, shi - slo, right);
        }
        if (!ok || !ring_wait(s)) goto out;
        if (fp16) vg__half_to_float_n(hr, fb + rlo, (size_t)(rhi - rlo));
        ring_add(s, rlo, rhi, t == n - 2 ? s->k : 1.0);
    }
    if (fp16) { /* this rank's finished chunk, as the peers will receive it */
        int64_t lo = chunk_lo(s, (me + 1) % n), hi = chunk_hi(s, (me + 1) % n);
        vg__float_to_half_n(fb + lo, hs, (size_t)(hi - lo));
        vg__half_to_float_n(hs, fb + lo, (size_t)(hi - lo));
    }
    /* allgather: in step t, send chunk me + 1 - t, receive chunk me - t */
    for (int t = 0; t < n - 1; t++) {
        int sc = (me + 1 - t + 2 * n) % n, rc = (me - t + 2 * n) % n;
        int64_t rlo = chunk_lo(s, rc), rhi = chunk_hi(s, rc), slo = chunk_lo(s, sc), shi = chunk_hi(s, sc);
        if (fp16) {
            vg__float_to_half_n(fb + slo, hs, (size_t)(shi - slo));
            if (!ring_post_type(s, false, hr, rhi - rlo, left, MPI_UINT16_T) ||
                !ring_post_type(s, true, hs, shi - slo, right, MPI_UINT16_T) || !ring_wait(s))
                goto out;
            vg__half_to_float_n(hr, fb + rlo, (size_t)(rhi - rlo));
        } else if (!ring_post(s, false, buf + rlo * (int64_t)s->es, rhi - rlo, left) ||
                   !ring_post(s, true, buf + slo * (int64_t)s->es, shi - slo, right) || !ring_wait(s)) {
            goto out;
        }
    }
out:
    if (s->nreqs) { /* a failed post: finish what was started (bounded by the timeout) */
        vg_code c = s->r->code;
        poll_all(s->r, s->nreqs, s->reqs, "ring allreduce");
        if (c != VG_OK && s->r->code != VG_DEADLINE_EXCEEDED) s->r->code = c;
    }
    vg__free(hs);
    vg__free(s->reqs);
    s->reqs = NULL;
}

/* ---- hierarchical allreduce (Horovod's HOROVOD_HIERARCHICAL_ALLREDUCE) ---------------
 *
 * The world split into nodes (MPI_COMM_TYPE_SHARED; VIGIL_TEST_NODE_SIZE=k instead
 * makes fake nodes of k consecutive ranks, to test on one machine) and a communicator
 * of the nodes' first ranks (the leaders). Built at the first hierarchical request
 * (every rank reaches it at the same collective). A request then packs its inputs into
 * the fusion buffer, MPI_Reduce sums them onto the node's leader, the leaders run the
 * ring (with fp16 when asked) and MPI_Bcast gives the node the result: the network
 * carries the buffer once per node. */
static struct {
    bool tried, on;
    MPI_Comm node, leaders;
    int node_rank, node_size, nnodes;
} H;

static int env_flag(const char *name) {
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

static bool hier_wanted(const vg__comm_req *r) {
    static int env = -1;
    if (env < 0) env = env_flag("VIGIL_HIERARCHICAL") || env_flag("HOROVOD_HIERARCHICAL_ALLREDUCE");
    return r->hier || env;
}

/* Collective over the world (every rank calls it at the same request). */
static void hier_setup(vg__comm_req *r) {
    H.tried = true;
    const char *ns = getenv("VIGIL_TEST_NODE_SIZE");
    long k = ns ? strtol(ns, NULL, 10) : 0;
    int rc = k > 0 ? MPI_Comm_split(g.comm, (int)(g.rank / k), g.rank, &H.node)
                   : MPI_Comm_split_type(g.comm, MPI_COMM_TYPE_SHARED, g.rank, MPI_INFO_NULL, &H.node);
    if (!mpi_ok(r, rc, "MPI_Comm_split (the node)")) return;
    MPI_Comm_rank(H.node, &H.node_rank);
    MPI_Comm_size(H.node, &H.node_size);
    if (!mpi_ok(r, MPI_Comm_split(g.comm, H.node_rank == 0 ? 0 : MPI_UNDEFINED, g.rank, &H.leaders),
                "MPI_Comm_split (the leaders)"))
        return;
    if (H.leaders != MPI_COMM_NULL) MPI_Comm_size(H.leaders, &H.nnodes);
    int most = H.node_size;
    if (!mpi_ok(r, MPI_Bcast(&H.nnodes, 1, MPI_INT, 0, H.node), "MPI_Bcast") ||
        !mpi_ok(r, MPI_Allreduce(MPI_IN_PLACE, &most, 1, MPI_INT, MPI_MAX, g.comm), "MPI_Allreduce"))
        return;
    H.on = H.nnodes > 1 && most > 1; /* else the flat ring is the same thing */
}

static void exec_hier(vg__comm_req *r) {
    size_t es = dt_size(r->dt);
    char *buf = r->buf;
    memset(buf, 0, (size_t)r->count * es); /* the padding between slices */
    for (int i = 0; i < r->nparts; i++) {
        const vg__comm_part *q = &r->parts[i];
        if (q->send && q->send != q->recv && q->count > 0) memcpy(q->recv, q->send, (size_t)q->count * es);
    }
    bool leader = H.leaders != MPI_COMM_NULL;
    void *sum = NULL;
    if (leader && H.node_size > 1) {
        sum = vg__malloc((size_t)r->count * es);
        if (!sum) {
            req_fail(r, VG_RESOURCE_EXHAUSTED, "out of memory for the node's sum");
            /* the node's peers are in MPI_Reduce already: finish it with our own data */
            MPI_Reduce(MPI_IN_PLACE, buf, (int)r->count, mpi_type(r->dt), MPI_SUM, 0, H.node);
        } else if (!mpi_ok(r, MPI_Reduce(buf, sum, (int)r->count, mpi_type(r->dt), MPI_SUM, 0, H.node),
                           "MPI_Reduce (the node)")) {
            vg__free(sum);
            return;
        }
    } else if (H.node_size > 1 &&
               !mpi_ok(r, MPI_Reduce(buf, NULL, (int)r->count, mpi_type(r->dt), MPI_SUM, 0, H.node),
                       "MPI_Reduce (the node)")) {
        return;
    }
    if (leader && r->code == VG_OK) {
        vg__comm_part whole = {sum ? sum : NULL, buf, r->count, false};
        void *own = NULL;
        if (!sum) { /* a node of one rank: its packed inputs are the node's sum */
            own = vg__malloc((size_t)r->count * es);
            if (own) memcpy(own, buf, (size_t)r->count * es);
            whole.send = own;
        }
        if (!whole.send) {
            req_fail(r, VG_RESOURCE_EXHAUSTED, "out of memory for the node's sum");
        } else {
            int me = 0;
            MPI_Comm_rank(H.leaders, &me);
            ring_state s = {r, r->count, es, mpi_type(r->dt), NULL, 0, 0, &whole, 1, H.leaders, H.nnodes, me, 1.0};
            ring_run(&s, r->fp16 && r->dt == VG_FLOAT);
        }
        vg__free(own);
    }
    vg__free(sum);
    /* a leader that failed still broadcasts (whatever it holds) so its node does not hang */
    if (H.node_size > 1 && !mpi_ok(r, MPI_Bcast(buf, (int)r->count, mpi_type(r->dt), 0, H.node), "MPI_Bcast (the node)"))
        return;
    for (int i = 0; i < r->nparts; i++)
        if (r->parts[i].scale) scale_part(r->parts[i].recv, r->parts[i].count, r->dt, g.size);
}

typedef struct shm_poll shm_poll;
static bool shm_usable(const vg__comm_req *r);
static int shm_fused(vg__comm_req *r, const shm_poll *p);

static void exec_fused(vg__comm_req *r) {
    if (hier_wanted(r) && r->count < INT32_MAX) {
        if (!H.tried) hier_setup(r);
        if (r->code != VG_OK) return;
        if (H.on) {
            exec_hier(r);
            return;
        }
        if (shm_usable(r)) { /* one node after all: as every later request */
            shm_fused(r, NULL);
            return;
        }
    }
    ring_state s = {r, r->count, dt_size(r->dt), mpi_type(r->dt), NULL, 0, 0, r->parts, r->nparts, g.comm, g.size,
                    g.rank, 1.0 / g.size};
    ring_run(&s, r->fp16 && r->dt == VG_FLOAT);
}

/* ---- the fused allreduce on shared memory (ranks of one node) -----------------------
 *
 * When every rank runs on the same node (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)
 * gives the whole world) vg_dist_init allocates one MPI-3 shared window
 * (MPI_Win_allocate_shared): a control block per rank (sequence numbers, the element
 * count, the pid) and, twice (even and odd collectives), a slot per rank as large as
 * a fusion buffer can be (S.slot bytes). A FUSED request that fits runs there instead
 * of the ring, N chunks of the buffer as the ring's (rank c owns chunk c):
 *   1. each rank copies its inputs, except its own chunk, into its slot at the fusion
 *      buffer's offsets and publishes `arrive` = the collective's sequence number;
 *   2. once every peer has arrived, each rank sums its chunk: its own input plus the
 *      peers' slots (times 1 / N for a mean), into its fusion buffer and into its own
 *      slot's chunk, and publishes `done`;
 *   3. once every peer is done, each rank copies the other chunks from their owners'
 *      slots into its fusion buffer.
 * No MPI message and no MPI barrier: ranks wait on each other's counters (C11 atomics
 * with acquire/release; MPI_Win_sync as MPI's memory model asks). The two waits already
 * order every rewrite of a slot after the peers' reads (the chunks peers read in step
 * 2 of collective k are rewritten in step 1 of k + 1 after every peer published
 * `done` for k; the own chunk, read in step 3, in step 2 of k + 1, after every peer
 * arrived at k + 1), so one set of slots would do; two (collective k uses set k & 1)
 * measured 5-10% faster: a line written at k was last read by the peer at k - 2 and has
 * often left its cache, so the write invalidates less. A waiter
 * spins 50 us, then yields the core between polls, then sleeps 1 ms between polls
 * after 100 ms; every 20 ms it checks that the peers' processes still exist (a dead
 * peer: UNAVAILABLE, not a hang), and it polls the session's cancellation and deadline
 * like the MPI entry barrier: a waiter that gives up hands the request, resumable at
 * the step it reached, to the communication thread, which finishes it so the ranks
 * stay in step. Worlds across nodes keep the ring. */

typedef struct {
    _Atomic uint64_t arrive;
    char pad0[56];
    _Atomic uint64_t done;
    char pad1[56];
    _Atomic int64_t count;
    _Atomic int64_t pid;
    _Atomic int64_t cpu; /* the CPU the rank ran on when it last published (sched_getcpu) */
    char pad2[40];
} shm_ctl;

static struct {
    bool on, pid_check, have_win, have_local;
    MPI_Comm local;
    MPI_Win win;
    shm_ctl *ctl;
    char *slots;
    size_t slot;   /* bytes per rank and set */
    uint64_t seq;  /* of the last shared-memory collective (the MPI caller's only) */
} S;

static void pause_ns(int64_t ns);

/* Slot i starts SLOT_SKEW * i bytes after i slots: the slots' streams in one loop (a
 * peer's slot read, this rank's written) then differ in their low 12 bits (addresses 4 KB
 * apart alias in the load/store queues: the reduce of the MLP's half took 95 us, not 30). */
#define SLOT_SKEW ((size_t)320)
static char *shm_slot(uint64_t seq, int rank) {
    size_t i = (size_t)(seq & 1) * (size_t)g.size + (size_t)rank;
    return S.slots + i * (S.slot + SLOT_SKEW);
}

/* (a hierarchical request takes the ring paths until they found one node only) */
static bool shm_usable(const vg__comm_req *r) {
    return S.on && r->kind == VG__COMM_FUSED && (size_t)r->count * dt_size(r->dt) <= S.slot &&
           !(hier_wanted(r) && (!H.tried || H.on));
}

/* chunk c of the shared-memory allreduce: [lo, hi) elements, cache-line aligned */
static int64_t shm_lo(const vg__comm_req *r, int c) {
    int64_t per_line = 64 / (int64_t)dt_size(r->dt), lo = r->count * c / g.size;
    return c == 0 ? 0 : lo - lo % per_line;
}
static int64_t shm_hi(const vg__comm_req *r, int c) { return c == g.size - 1 ? r->count : shm_lo(r, c + 1); }

/* The part's elements [a, b) of the buffer. */
static int64_t part_at(const vg__comm_req *r, const vg__comm_part *q) {
    return ((const char *)q->recv - (const char *)r->buf) / (int64_t)dt_size(r->dt);
}

/* A peer's process is gone (or a zombie waiting for mpirun to reap it). */
static bool pid_dead(int64_t pid) {
    if (pid <= 0) return false;
    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) return true;
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%lld/stat", (long long)pid);
    FILE *f = fopen(path, "r");
    if (!f) return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *e = strrchr(buf, ')');
    return e && e[1] == ' ' && (e[2] == 'Z' || e[2] == 'X');
}

struct shm_poll {
    bool (*cancelled)(const void *arg);
    const void *arg;
    int64_t deadline_ns;
};

enum { SHM_DONE, SHM_CANCEL, SHM_STOP, SHM_LATE };

/* Waits until every peer's `arrive` (done: `done`) reaches the request's sequence
 * number. SHM_DONE with r->code set when a peer died; the others when p (NULL: none)
 * says to give up. */
static int shm_wait(vg__comm_req *r, bool done, const shm_poll *p) {
    int64_t t0 = 0, checked = 0, tmo = 0;
    for (unsigned iter = 0;; iter++) {
        int j = 0;
        for (; j < g.size; j++) {
            if (j == g.rank) continue;
            _Atomic uint64_t *c = done ? &S.ctl[j].done : &S.ctl[j].arrive;
            if (atomic_load_explicit(c, memory_order_acquire) < r->shm_seq) break;
        }
        if (j == g.size) return SHM_DONE;
        /* The peer being waited for last ran on this CPU: with more ranks than free
         * cores (or --bind-to none placing two ranks on one core for a while) spinning
         * only delays the peer, so give it the core at once. */
        if (iter % 64 == 1 && atomic_load_explicit(&S.ctl[j].cpu, memory_order_relaxed) == sched_getcpu()) {
            sched_yield();
            continue;
        }
        if (iter % 64) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
            continue;
        }
        int64_t now = vg__now_ns();
        if (!t0) {
            t0 = checked = now;
            tmo = timeout_ns_now();
        }
        if (tmo > 0 && now - t0 >= tmo) {
            late_fail(r, "shared-memory allreduce", now - t0);
            return SHM_DONE;
        }
        if (now - t0 > 100000000 && silent_fail(r, "shared-memory allreduce")) return SHM_DONE;
        if (p) {
            pthread_mutex_lock(&g_mu);
            bool stop = g.stop;
            pthread_mutex_unlock(&g_mu);
            if (stop) return SHM_STOP;
            if (p->cancelled && p->cancelled(p->arg)) return SHM_CANCEL;
            if (p->deadline_ns > 0 && now >= p->deadline_ns) return SHM_LATE;
        }
        if (S.pid_check && now - checked > 20000000) {
            checked = now;
            for (int k = 0; k < g.size; k++) {
                int64_t pid = atomic_load_explicit(&S.ctl[k].pid, memory_order_relaxed);
                if (k != g.rank && pid_dead(pid)) {
                    r->code = VG_UNAVAILABLE;
                    snprintf(r->msg, sizeof r->msg,
                             "rank %d (pid %lld) exited during a shared-memory allreduce (a peer rank is gone)", k,
                             (long long)pid);
                    return SHM_DONE;
                }
            }
        }
        if (now - t0 > 100000000) pause_ns(1000000);
        else if (now - t0 > 50000) sched_yield();
    }
}

/* d1 = d2 = (own + s[0] + ... + s[ns - 1]) [* k]: shm_sum_f32 and shm_sum_f64 */
#define DEFINE_SHM_SUM(T, SFX, V)                                                                      \
    RING_CLONES static void shm_sum_##SFX(T *restrict d1, T *restrict d2, const T *restrict own,       \
                                          const T *const *s, int ns, int64_t n, T k, bool scale) {     \
        const int64_t w = (int64_t)(sizeof(V) / sizeof(T));                                            \
        int64_t i = 0;                                                                                 \
        for (; i + w <= n; i += w) {                                                                   \
            V a, b;                                                                                    \
            memcpy(&a, own + i, sizeof a);                                                             \
            for (int j = 0; j < ns; j++) {                                                             \
                memcpy(&b, s[j] + i, sizeof b);                                                        \
                a += b;                                                                                \
            }                                                                                          \
            if (scale) a *= k;                                                                         \
            memcpy(d1 + i, &a, sizeof a);                                                              \
            memcpy(d2 + i, &a, sizeof a);                                                              \
        }                                                                                              \
        for (; i < n; i++) {                                                                           \
            T a = own[i];                                                                              \
            for (int j = 0; j < ns; j++) a += s[j][i];                                                 \
            if (scale) a *= k;                                                                         \
            d1[i] = d2[i] = a;                                                                         \
        }                                                                                              \
    }
DEFINE_SHM_SUM(float, f32, ring_f32v)
DEFINE_SHM_SUM(double, f64, ring_f64v)

/* Runs (or resumes) a FUSED request on the shared window; SHM_DONE with r->code set,
 * or where p made it give up (r->shm_seq / shm_stage say where to resume). */

static int shm_fused(vg__comm_req *r, const shm_poll *p) {
    int n = g.size, me = g.rank;
    int64_t es = (int64_t)dt_size(r->dt);
    char *buf = r->buf;
    int64_t lo = shm_lo(r, me), hi = shm_hi(r, me);
    if (!r->shm_seq) { /* 1: publish this rank's input outside its own chunk */
        r->shm_seq = ++S.seq;
        char *mine = shm_slot(r->shm_seq, me);
        for (int i = 0; i < r->nparts; i++) {
            const vg__comm_part *q = &r->parts[i];
            int64_t a = part_at(r, q), b = a + q->count;
            int64_t x1 = a, y1 = b < lo ? b : lo, x2 = a > hi ? a : hi, y2 = b;
            if (y1 > x1) memcpy(mine + x1 * es, (const char *)q->send + (x1 - a) * es, (size_t)((y1 - x1) * es));
            if (y2 > x2) memcpy(mine + x2 * es, (const char *)q->send + (x2 - a) * es, (size_t)((y2 - x2) * es));
        }
        atomic_store_explicit(&S.ctl[me].count, r->count, memory_order_relaxed);
        MPI_Win_sync(S.win);
        atomic_store_explicit(&S.ctl[me].cpu, sched_getcpu(), memory_order_relaxed);
        atomic_store_explicit(&S.ctl[me].arrive, r->shm_seq, memory_order_release);
        r->shm_stage = 1;
    }
    if (r->shm_stage == 1) { /* 2: this rank's chunk of the sum */
        int w = shm_wait(r, false, p);
        if (w != SHM_DONE || r->code != VG_OK) return w;
        MPI_Win_sync(S.win);
        for (int j = 0; j < n; j++)
            if (atomic_load_explicit(&S.ctl[j].count, memory_order_relaxed) != r->count && r->code == VG_OK) {
                r->code = VG_INVALID_ARGUMENT;
                snprintf(r->msg, sizeof r->msg,
                         "fused allreduce of %lld elements on rank %d, %lld on rank %d (are the graphs built the same "
                         "on every rank?)",
                         (long long)r->count, me, (long long)atomic_load(&S.ctl[j].count), j);
            }
        if (r->code == VG_OK) {
            const void *src[64];
            const void **srcs = n - 1 <= 64 ? src : vg__malloc((size_t)(n - 1) * sizeof *srcs);
            if (!srcs) {
                req_fail(r, VG_RESOURCE_EXHAUSTED, "out of memory in the shared-memory allreduce");
            } else {
                char *mine = shm_slot(r->shm_seq, me);
                double k = 1.0 / n;
                for (int i = 0; i < r->nparts; i++) {
                    const vg__comm_part *q = &r->parts[i];
                    int64_t a = part_at(r, q), b = a + q->count;
                    int64_t x = a > lo ? a : lo, y = b < hi ? b : hi;
                    if (y <= x) continue;
                    for (int j = 0, m = 0; j < n; j++)
                        if (j != me) srcs[m++] = shm_slot(r->shm_seq, j) + x * es;
                    const char *own = (const char *)q->send + (x - a) * es;
                    if (r->dt == VG_FLOAT)
                        shm_sum_f32((float *)(buf + x * es), (float *)(mine + x * es), (const float *)own,
                                    (const float *const *)srcs, n - 1, y - x, (float)k, q->scale);
                    else
                        shm_sum_f64((double *)(buf + x * es), (double *)(mine + x * es), (const double *)own,
                                    (const double *const *)srcs, n - 1, y - x, k, q->scale);
                }
                if (srcs != src) vg__free(srcs);
            }
        }
        MPI_Win_sync(S.win);
        atomic_store_explicit(&S.ctl[me].cpu, sched_getcpu(), memory_order_relaxed);
        atomic_store_explicit(&S.ctl[me].done, r->shm_seq, memory_order_release);
        r->shm_stage = 2;
        if (r->code != VG_OK) return SHM_DONE;
    }
    /* 3: the other chunks from their owners */
    int w = shm_wait(r, true, p);
    if (w != SHM_DONE || r->code != VG_OK) return w;
    MPI_Win_sync(S.win);
    for (int c = 0; c < n; c++) {
        if (c == me) continue;
        int64_t clo = shm_lo(r, c), chi = shm_hi(r, c);
        const char *theirs = shm_slot(r->shm_seq, c);
        for (int i = 0; i < r->nparts; i++) {
            const vg__comm_part *q = &r->parts[i];
            int64_t a = part_at(r, q), b = a + q->count;
            int64_t x = a > clo ? a : clo, y = b < chi ? b : chi;
            if (y > x) memcpy(buf + x * es, theirs + x * es, (size_t)((y - x) * es));
        }
    }
    r->shm_stage = 3;
    return SHM_DONE;
}

/* At vg_dist_init, every rank: the shared window when the whole world is on this node
 * (local: its shared-memory communicator, kept on success). VIGIL_SHM=0 turns it off,
 * VIGIL_SHM_SLOT_BYTES sets the slot (default: 4 MB, at most 64 MB in all). Every rank
 * takes the same decision (an MPI_Allreduce of the flags). */
static void shm_setup(MPI_Comm local) {
    const char *e = getenv("VIGIL_SHM");
    int want = local != MPI_COMM_NULL && g.size > 1 && g.local_size == g.size && !(e && strcmp(e, "0") == 0), all = 0;
    size_t slot = (size_t)4 << 20;
    if (g.size > 0 && slot * 2 * (size_t)g.size > ((size_t)64 << 20)) slot = ((size_t)64 << 20) / (2 * (size_t)g.size);
    const char *sb = getenv("VIGIL_SHM_SLOT_BYTES");
    if (sb && atoll(sb) > 0) slot = (size_t)atoll(sb);
    slot = (slot + 4095) & ~(size_t)4095;
    MPI_Allreduce(&want, &all, 1, MPI_INT, MPI_MIN, g.comm);
    if (!all) return;
    size_t ctl = ((size_t)g.size * sizeof(shm_ctl) + 4095) & ~(size_t)4095;
    MPI_Aint bytes = (MPI_Aint)(ctl + 2 * (size_t)g.size * (slot + SLOT_SKEW));
    void *mine = NULL;
    int ok = MPI_Win_allocate_shared(g.local_rank == 0 ? bytes : 0, 1, MPI_INFO_NULL, local, &mine, &S.win) == MPI_SUCCESS;
    if (ok) {
        S.have_win = true;
        MPI_Win_set_errhandler(S.win, MPI_ERRORS_RETURN);
        MPI_Aint sz = 0;
        int du = 0;
        void *base = NULL;
        ok = MPI_Win_shared_query(S.win, 0, &sz, &du, &base) == MPI_SUCCESS && base && sz >= bytes;
        if (ok) {
            S.ctl = base;
            S.slots = (char *)base + ctl;
            S.slot = slot;
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, g.comm);
    if (!ok) {
        if (S.have_win) MPI_Win_free(&S.win);
        S.have_win = false;
        return;
    }
    MPI_Win_lock_all(MPI_MODE_NOCHECK, S.win);
    if (g.local_rank == 0) memset(S.ctl, 0, ctl);
    MPI_Win_sync(S.win);
    MPI_Barrier(local);
    MPI_Win_sync(S.win);
    atomic_store(&S.ctl[g.local_rank].pid, (int64_t)getpid());
    atomic_store(&S.ctl[g.local_rank].cpu, (int64_t)-1);
    MPI_Win_sync(S.win);
    MPI_Barrier(local);
    MPI_Win_sync(S.win);
    /* the pids mean something here only when every peer's is alive in our namespace */
    S.pid_check = true;
    for (int j = 0; j < g.size; j++) {
        int64_t pid = atomic_load(&S.ctl[j].pid);
        if (pid <= 0 || (kill((pid_t)pid, 0) != 0 && errno == ESRCH)) S.pid_check = false;
    }
    S.local = local;
    S.have_local = true;
    S.seq = 0;
    S.on = true;
}

/* Before the collective teardown (MPI_Win_free, MPI_Comm_free, MPI_Finalize), every
 * rank meets in an MPI_Ibarrier polled with sleeps growing from 10 us to 1 ms: a rank
 * that finalizes while a peer still works (evaluating, checkpointing) waits there
 * almost idle, where MPI_Win_free's own wait spun (1.9-2.0 CPU-seconds of a 3 s wait).
 * Once the barrier completes every rank is in the teardown, whose collectives then
 * wait for nobody. A peer that died (its pid gone, on one node) ends the wait with
 * UNAVAILABLE, as does a peer whose heartbeats stopped (any host). While heartbeats run,
 * the collective timeout does not apply here: a peer that still beats is alive and
 * finishing its own work (the chief's last checkpoint or a long final evaluation), and
 * waiting for it is right. False with *msg set on failure. */
static bool quiet_barrier(char *msg, size_t len) {
    MPI_Request q;
    int rc = MPI_Ibarrier(g.comm, &q);
    int64_t sleep_ns = 10000, checked = vg__now_ns(), t0 = checked, tmo = timeout_ns_now();
    while (rc == MPI_SUCCESS) {
        int flag = 0;
        rc = MPI_Test(&q, &flag, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS || flag) break;
        pause_ns(sleep_ns);
        if (sleep_ns < 1000000) sleep_ns = sleep_ns * 2 < 1000000 ? sleep_ns * 2 : 1000000;
        int64_t now = vg__now_ns();
        if (now - t0 > 100000000 && peer_silent(msg, len, "vg_dist_finalize (the final barrier)")) return false;
        if (tmo > 0 && now - t0 >= tmo && !vg__hb_on()) {
            int left = (g.rank + g.size - 1) % g.size;
            snprintf(msg, len, "vg_dist_finalize: no progress for %.1f s (collective timeout) in the final barrier, "
                     "waiting on rank %d (host %s)", (double)(now - t0) / 1e9, left, g.hosts ? g.hosts[left] : "?");
            return false;
        }
        if (S.pid_check && now - checked > 20000000) {
            checked = now;
            for (int k = 0; k < g.size; k++) {
                int64_t pid = atomic_load_explicit(&S.ctl[k].pid, memory_order_relaxed);
                if (k != g.rank && pid_dead(pid)) {
                    snprintf(msg, len, "vg_dist_finalize: rank %d (pid %lld) exited before finalizing", k,
                             (long long)pid);
                    return false;
                }
            }
        }
    }
    if (rc == MPI_SUCCESS) return true;
    char es[MPI_MAX_ERROR_STRING];
    int n = 0;
    MPI_Error_string(rc, es, &n);
    snprintf(msg, len, "vg_dist_finalize: the final barrier failed: %.*s (a peer rank is gone)", n, es);
    return false;
}

static void shm_teardown(void) {
    if (S.have_win) {
        if (S.on) MPI_Win_unlock_all(S.win);
        MPI_Win_free(&S.win);
    }
    if (S.have_local) MPI_Comm_free(&S.local);
    S.have_win = S.have_local = S.on = false;
}

/* ---- point-to-point messages (vg_dist_send / vg_dist_recv) ---------------------------
 * A send copies the caller's bytes and starts an MPI_Isend that completes whenever the
 * receiver takes the message: a sender never waits on a slow peer (SyncReplicas' chief
 * sending to a backup worker that is still computing). Pending sends are tested on
 * every later point-to-point call (MPI progresses them there) and waited for by FLUSH.
 * A receive polls MPI_Iprobe (any source, or one), then takes the probed message. Tags
 * are offset so that they never meet the ring's. */
enum { P2P_TAG_BASE = 20000 };

static bool progress_sends(vg__comm_req *r) {
    int k = 0;
    for (int i = 0; i < g.npend; i++) {
        int flag = 0;
        if (!mpi_ok(r, MPI_Test(&g.psend[i], &flag, MPI_STATUS_IGNORE), "MPI_Isend")) return false;
        if (flag) {
            vg__free(g.pbuf[i]);
            continue;
        }
        g.psend[k] = g.psend[i];
        g.pbuf[k] = g.pbuf[i];
        g.pdest[k++] = g.pdest[i];
    }
    g.npend = k;
    return true;
}

static void exec_send(vg__comm_req *r) {
    if (!progress_sends(r)) return;
    if (g.npend == g.cappend) {
        int cap = g.cappend ? 2 * g.cappend : 16;
        MPI_Request *q = vg__realloc(g.psend, (size_t)g.cappend * sizeof *q, (size_t)cap * sizeof *q);
        if (q) g.psend = q;
        void **b = vg__realloc(g.pbuf, (size_t)g.cappend * sizeof *b, (size_t)cap * sizeof *b);
        if (b) g.pbuf = b;
        int *d = vg__realloc(g.pdest, (size_t)g.cappend * sizeof *d, (size_t)cap * sizeof *d);
        if (d) g.pdest = d;
        if (!q || !b || !d) {
            req_fail(r, VG_RESOURCE_EXHAUSTED, "out of memory queueing a send");
            return;
        }
        g.cappend = cap;
    }
    MPI_Request q;
    if (!mpi_ok(r, MPI_Isend(r->buf, (int)r->count, MPI_BYTE, r->root, P2P_TAG_BASE + r->tag, g.comm, &q), "MPI_Isend"))
        return;
    g.psend[g.npend] = q;
    g.pbuf[g.npend] = r->buf; /* MPI reads it until the send completes */
    g.pdest[g.npend++] = r->root;
    r->buf = NULL;
}

static void p2p_late(vg__comm_req *r, const char *what, int peer, int64_t waited_ns) {
    r->code = VG_DEADLINE_EXCEEDED;
    if (peer >= 0)
        snprintf(r->msg, sizeof r->msg,
                 "%s: no progress for %.1f s (collective timeout) waiting on rank %d (host %s): it or its link is "
                 "down or too slow",
                 what, (double)waited_ns / 1e9, peer, g.hosts ? g.hosts[peer] : "?");
    else
        snprintf(r->msg, sizeof r->msg,
                 "%s: no progress for %.1f s (collective timeout) waiting for a message from any rank", what,
                 (double)waited_ns / 1e9);
}

static void exec_recv(vg__comm_req *r) {
    int src = r->root < 0 ? MPI_ANY_SOURCE : r->root, tag = P2P_TAG_BASE + r->tag;
    int64_t t0 = 0, tmo = 0;
    for (unsigned iter = 0;; iter++) {
        if (!progress_sends(r)) return;
        int flag = 0;
        MPI_Status ms;
        if (!mpi_ok(r, MPI_Iprobe(src, tag, g.comm, &flag, &ms), "MPI_Iprobe")) return;
        if (flag) {
            int n = 0;
            MPI_Get_count(&ms, MPI_BYTE, &n);
            r->gathered = vg__malloc(n > 0 ? (size_t)n : 1);
            if (!r->gathered) {
                req_fail(r, VG_RESOURCE_EXHAUSTED, "out of memory receiving a message");
                return;
            }
            MPI_Request q;
            if (!mpi_wait_ok(r, MPI_Irecv(r->gathered, n, MPI_BYTE, ms.MPI_SOURCE, tag, g.comm, &q), &q, "MPI_Recv"))
                return;
            r->total = n;
            r->mismatch = ms.MPI_SOURCE;
            return;
        }
        if (!r->wait) return;
        if (iter % 16) continue;
        int64_t waited;
        if (!poll_in_time(r, "receiving a message", true, r->root, &t0, &tmo, &waited)) return;
        if (waited > 2000000) pause_ns(200000); /* a peer still computing: sleep between polls */
        else sched_yield();
    }
}

static void exec_flush(vg__comm_req *r) {
    int64_t t0 = vg__now_ns(), tmo = timeout_ns_now();
    while (g.npend > 0) {
        if (!progress_sends(r) || g.npend == 0) return;
        int64_t waited;
        if (!poll_in_time(r, "waiting for a sent message to be received", true, g.pdest[0], &t0, &tmo, &waited))
            return;
        pause_ns(200000);
    }
}

static void exec_mpi(vg__comm_req *r) {
    r->code = VG_OK;
    MPI_Request q1; /* every call nonblocking, polled with the collective timeout */
    switch (r->kind) {
    case VG__COMM_ALLREDUCE: {
        size_t es = dt_size(r->dt);
        int64_t step = CHUNK / (int64_t)es;
        vg__comm_part whole = {r->sendbuf, r->buf, r->count, false};
        const vg__comm_part *parts = r->nparts ? r->parts : &whole;
        for (int i = 0; i < (r->nparts ? r->nparts : 1); i++) {
            const vg__comm_part *q = &parts[i];
            for (int64_t off = 0; off < q->count; off += step) {
                int64_t n = q->count - off < step ? q->count - off : step;
                const void *send = q->send && q->send != q->recv ? (const char *)q->send + off * (int64_t)es : MPI_IN_PLACE;
                if (!mpi_wait_ok(r, MPI_Iallreduce(send, (char *)q->recv + off * (int64_t)es, (int)n, mpi_type(r->dt),
                                                   mpi_op(r->op), g.comm, &q1), &q1, "MPI_Allreduce"))
                    return;
            }
            if (q->scale) scale_part(q->recv, q->count, r->dt, g.size);
        }
        return;
    }
    case VG__COMM_BCAST:
        for (int64_t off = 0; off < r->count; off += CHUNK) {
            int64_t n = r->count - off < CHUNK ? r->count - off : CHUNK;
            if (!mpi_wait_ok(r, MPI_Ibcast((char *)r->buf + off, (int)n, MPI_BYTE, r->root, g.comm, &q1), &q1, "MPI_Bcast"))
                return;
        }
        return;
    case VG__COMM_FUSED:
        if (shm_usable(r)) shm_fused(r, NULL);
        else exec_fused(r);
        return;
    case VG__COMM_BARRIER:
        mpi_wait_ok(r, MPI_Ibarrier(g.comm, &q1), &q1, "MPI_Barrier");
        return;
    case VG__COMM_SEND:
        exec_send(r);
        return;
    case VG__COMM_RECV:
        exec_recv(r);
        return;
    case VG__COMM_FLUSH:
        exec_flush(r);
        return;
    case VG__COMM_CHECK: {
        /* max of v and max of -v: equal everywhere iff max == -max(-v) */
        int64_t n = r->count;
        int64_t *both = vg__malloc((size_t)(2 * n + 1) * sizeof(int64_t));
        if (!both) {
            req_fail(r, VG_RESOURCE_EXHAUSTED, "out of memory allocating the check buffer");
            return;
        }
        const int64_t *v = r->buf;
        for (int64_t i = 0; i < n; i++) {
            both[i] = v[i];
            both[n + i] = v[i] == INT64_MIN ? INT64_MAX : -v[i];
        }
        if (mpi_wait_ok(r, MPI_Iallreduce(MPI_IN_PLACE, both, (int)(2 * n), MPI_INT64_T, MPI_MAX, g.comm, &q1), &q1,
                        "MPI_Allreduce")) {
            for (int64_t i = 0; i < n; i++)
                if (both[i] != -both[n + i]) {
                    r->mismatch = (int)i;
                    break;
                }
        }
        vg__free(both);
        return;
    }
    case VG__COMM_ALLGATHER: {
        int size = g.size;
        int64_t mine = r->count;
        r->counts = vg__malloc((size_t)size * sizeof(int64_t));
        int *cnt = vg__malloc((size_t)size * sizeof(int)), *disp = vg__malloc((size_t)size * sizeof(int));
        if (!r->counts || !cnt || !disp) {
            vg__free(cnt);
            vg__free(disp);
            req_fail(r, VG_RESOURCE_EXHAUSTED, "out of memory allocating the gather counts");
            return;
        }
        if (mpi_wait_ok(r, MPI_Iallgather(&mine, 1, MPI_INT64_T, r->counts, 1, MPI_INT64_T, g.comm, &q1), &q1,
                        "MPI_Allgather")) {
            int64_t total = 0;
            for (int i = 0; i < size; i++) total += r->counts[i];
            if (total > INT32_MAX) {
                req_fail(r, VG_INVALID_ARGUMENT, "gather of more than 2 GiB");
            } else {
                for (int i = 0, off = 0; i < size; i++) {
                    cnt[i] = (int)r->counts[i];
                    disp[i] = off;
                    off += cnt[i];
                }
                r->total = total;
                r->gathered = vg__malloc(total ? (size_t)total : 1);
                if (!r->gathered)
                    req_fail(r, VG_RESOURCE_EXHAUSTED, "out of memory allocating the gather result");
                else
                    mpi_wait_ok(r, MPI_Iallgatherv(r->buf, (int)mine, MPI_BYTE, r->gathered, cnt, disp, MPI_BYTE, g.comm,
                                                   &q1), &q1, "MPI_Allgatherv");
            }
        }
        vg__free(cnt);
        vg__free(disp);
        return;
    }
    }
}

/* After the MPI call: marks the world broken on UNAVAILABLE, the request done, MPI
 * free for the next caller. Lock held. */
static void finish_locked(vg__comm_req *r) {
    if ((r->code == VG_UNAVAILABLE || r->code == VG_DEADLINE_EXCEEDED) && !g.broken) {
        g.broken = true;
        snprintf(g.broken_msg, sizeof g.broken_msg, "an earlier collective failed: %.120s", r->msg);
    }
    r->done = true;
    g.busy = false;
    pthread_cond_broadcast(&g_cv);
}

static void *comm_main(void *arg) {
    (void)arg;
    pthread_mutex_lock(&g_mu);
    for (;;) {
        /* a request runs when MPI is free (a direct caller may hold it) */
        while ((!g.head || g.busy) && !(g.stop && !g.head)) pthread_cond_wait(&g_cv, &g_mu);
        if (!g.head) break; /* stop with an empty queue */
        vg__comm_req *r = g.head;
        g.head = r->next;
        if (!g.head) g.tail = NULL;
        bool broken = g.broken;
        g.busy = true;
        pthread_mutex_unlock(&g_mu);
        if (broken) {
            req_fail(r, VG_UNAVAILABLE, g.broken_msg);
        } else if (r->has_barrier) { /* a direct request given up by its waiter */
            r->has_barrier = false;
            if (poll_all(r, 1, &r->barrier, "MPI_Ibarrier") && r->kind != VG__COMM_BARRIER)
                exec_mpi(r);
        } else {
            exec_mpi(r);
        }
        pthread_mutex_lock(&g_mu);
        finish_locked(r);
        bool last = --r->refs == 0;
        if (last) {
            pthread_mutex_unlock(&g_mu);
            req_destroy(r);
            pthread_mutex_lock(&g_mu);
        }
    }
    pthread_mutex_unlock(&g_mu);
    return NULL;
}

/* A direct request not run by its submitter goes to the front of the queue (it was
 * submitted before anything queued behind it) and MPI is free for the thread. */
static void hand_over_locked(vg__comm_req *r) {
    r->direct = false;
    r->refs++;
    r->next = g.head;
    g.head = r;
    if (!g.tail) g.tail = r;
    g.busy = false;
    pthread_cond_broadcast(&g_cv);
}

static void pause_ns(int64_t ns) {
    struct timespec ts = {0, (long)ns};
    nanosleep(&ts, NULL);
}

/* Runs a direct request on the calling thread, which holds MPI (g.busy). A waiter that
 * can be cancelled or time out first polls an MPI_Ibarrier: spinning for the first
 * 50 us (the usual skew between ranks), then yielding the core between polls (a short
 * sleep would give the core away: on a loaded machine getting it back took
 * milliseconds, every step), and sleeping 1 ms between polls after 100 ms (a peer busy
 * elsewhere: checkpointing, evaluating). */
static vg_code run_direct(vg__comm_req *r, bool (*cancelled)(const void *arg), const void *arg, int64_t deadline_ns,
                          vg_status *st) {
    r->code = VG_OK;
    if (shm_usable(r)) {
        shm_poll p = {cancelled, arg, deadline_ns};
        int w = shm_fused(r, cancelled || deadline_ns > 0 ? &p : NULL);
        if (w == SHM_DONE) goto finish;
        pthread_mutex_lock(&g_mu);
        hand_over_locked(r); /* the thread resumes it where it stopped */
        pthread_mutex_unlock(&g_mu);
        if (w == SHM_LATE) return vg_status_set(st, VG_DEADLINE_EXCEEDED, "Timed out waiting for a collective");
        return vg_status_set(st, VG_CANCELLED, w == SHM_STOP ? "collective cancelled: the distributed world is finalizing"
                                                             : "collective cancelled: the session is closing");
    }
    if (cancelled || deadline_ns > 0) {
        MPI_Request q;
        if (!mpi_ok(r, MPI_Ibarrier(g.comm, &q), "MPI_Ibarrier")) goto finish;
        int64_t t0 = vg__now_ns(), tmo = timeout_ns_now();
        bool backoff = false;
        for (unsigned iter = 1;; iter++) {
            int flag = 0;
            if (!mpi_ok(r, MPI_Test(&q, &flag, MPI_STATUS_IGNORE), "MPI_Ibarrier")) goto finish;
            if (flag) break;
            if (!backoff && iter % 64) continue; /* a clock read per 64 polls while spinning */
            int64_t now = vg__now_ns();
            pthread_mutex_lock(&g_mu);
            bool stop = g.stop;
            pthread_mutex_unlock(&g_mu);
            if (tmo > 0 && now - t0 >= tmo) { /* the collective timeout: the world is broken */
                late_fail(r, "entering a collective", now - t0);
                goto finish;
            }
            if (now - t0 > 100000000 && silent_fail(r, "entering a collective")) goto finish;
            bool cancel = stop || (cancelled && cancelled(arg)), late = deadline_ns > 0 && now >= deadline_ns;
            if (cancel || late) {
                pthread_mutex_lock(&g_mu);
                r->barrier = q;
                r->has_barrier = true;
                hand_over_locked(r);
                pthread_mutex_unlock(&g_mu);
                if (late && !cancel) return vg_status_set(st, VG_DEADLINE_EXCEEDED, "Timed out waiting for a collective");
                return vg_status_set(st, VG_CANCELLED, stop ? "collective cancelled: the distributed world is finalizing"
                                                            : "collective cancelled: the session is closing");
            }
            backoff = now - t0 > 50000;
            if (now - t0 > 100000000) pause_ns(1000000);
            else if (backoff) sched_yield();
        }
        if (r->kind == VG__COMM_BARRIER) goto finish;
    }
    exec_mpi(r);
finish:
    pthread_mutex_lock(&g_mu);
    finish_locked(r);
    pthread_mutex_unlock(&g_mu);
    if (r->code != VG_OK) return vg_status_set(st, r->code, "%s", r->msg);
    return VG_OK;
}
#endif

/* ---- submit / wait -------------------------------------------------------------- */

vg_code vg__comm_submit(vg__comm_req *r, vg_status *st) {
    if (r->kind == VG__COMM_ALLREDUCE && dt_size(r->dt) == 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "collective of dtype %d: only float32, float64, int32, int64",
                             (int)r->dt);
    pthread_mutex_lock(&g_mu);
    if (g.state != ST_UP) {
        bool down = g.state == ST_DOWN;
        pthread_mutex_unlock(&g_mu);
        return vg_status_set(st, down ? VG_CANCELLED : VG_FAILED_PRECONDITION,
                             down ? "the distributed world was finalized" : "vg_dist_init has not been called");
    }
    if (!g.thread_up) {
        pthread_mutex_unlock(&g_mu);
        exec_local(r);
        r->done = true;
        return VG_OK;
    }
    if (g.broken) {
        req_fail(r, VG_UNAVAILABLE, g.broken_msg);
        r->done = true;
        pthread_mutex_unlock(&g_mu);
        return VG_OK;
    }
    if (!g.head && !g.busy && !r->queue_only) { /* MPI is idle: the caller runs it in vg__comm_wait */
        r->direct = true;
        g.busy = true;
        pthread_mutex_unlock(&g_mu);
        return VG_OK;
    }
    r->refs++;
    r->next = NULL;
    if (g.tail) g.tail->next = r;
    else g.head = r;
    g.tail = r;
    pthread_cond_broadcast(&g_cv);
    pthread_mutex_unlock(&g_mu);
    return VG_OK;
}

vg_code vg__comm_wait(vg__comm_req *r, bool (*cancelled)(const void *arg), const void *arg, int64_t deadline_ns,
                      vg_status *st) {
#ifdef VIGIL_HAVE_MPI
    if (r->direct && !r->done) return run_direct(r, cancelled, arg, deadline_ns, st);
#endif
    pthread_mutex_lock(&g_mu);
    while (!r->done) {
        if (cancelled && cancelled(arg)) {
            pthread_mutex_unlock(&g_mu);
            return vg_status_set(st, VG_CANCELLED, "collective cancelled: the session is closing");
        }
        if (g.stop) {
            pthread_mutex_unlock(&g_mu);
            return vg_status_set(st, VG_CANCELLED, "collective cancelled: the distributed world is finalizing");
        }
        int64_t now = vg__now_ns();
        if (deadline_ns > 0 && now >= deadline_ns) {
            pthread_mutex_unlock(&g_mu);
            return vg_status_set(st, VG_DEADLINE_EXCEEDED, "Timed out waiting for a collective");
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 20 * 1000 * 1000; /* poll the cancellation every 20 ms */
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&g_cv, &g_mu, &ts);
    }
    pthread_mutex_unlock(&g_mu);
    if (r->code != VG_OK) return vg_status_set(st, r->code, "%s", r->msg);
    return VG_OK;
}

vg_code vg__comm_run(vg__comm_kind kind, void *buf, int64_t count, vg_dtype dt, vg_reduce_op op, int root,
                     vg_status *st) {
    vg__comm_req *r = vg__comm_req_new(kind, buf, count, dt, op, root);
    if (!r) return VG_OOM(st, "a collective request");
    vg_code rc = vg__comm_submit(r, st);
    if (rc == VG_OK) rc = vg__comm_wait(r, NULL, NULL, 0, st);
    vg__comm_req_free(r);
    return rc;
}

/* ---- the world ------------------------------------------------------------------- */

#ifdef VIGIL_HAVE_MPI
/* Every rank's heartbeat entry through one MPI_Allgather; heartbeats run only when
 * every rank could open its socket (otherwise a rank that cannot beat would look gone
 * to the others), and every rank decides the same. */
static void heartbeat_setup(void) {
    vg__hb_entry me;
    bool ok = vg__hb_prepare(g.hb_timeout_ms, &me);
    vg__hb_entry *all = vg__calloc((size_t)g.size, sizeof *all);
    int mine = ok && all ? 1 : 0, every = 0;
    if (MPI_Allreduce(&mine, &every, 1, MPI_INT, MPI_MIN, g.comm) != MPI_SUCCESS) every = 0;
    if (every && MPI_Allgather(&me, (int)sizeof me, MPI_BYTE, all, (int)sizeof me, MPI_BYTE, g.comm) == MPI_SUCCESS)
        vg__hb_start(g.rank, g.size, all);
    else
        vg__hb_stop();
    vg__free(all);
}
#endif

/* The milliseconds in the environment variable name into *ms, unless it is unset or a
 * setter has set *ms (set). false with st INVALID_ARGUMENT when it is not a whole number
 * >= 0 (the message says what 0 means: zero_means). */
static bool env_ms(const char *name, bool set, int64_t *ms, const char *zero_means, vg_status *st) {
    const char *e = getenv(name);
    if (!e || set) return true;
    char *end = NULL;
    long long v = strtoll(e, &end, 10);
    if (end == e || *end || v < 0) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "%s='%s': milliseconds >= 0 expected (0: %s)", name, e, zero_means);
        return false;
    }
    *ms = v;
    return true;
}

vg_code vg_dist_init(vg_status *st) {
    pthread_mutex_lock(&g_mu);
    if (g.state == ST_UP) {
        pthread_mutex_unlock(&g_mu);
        return VG_OK;
    }
    if (g.state == ST_DOWN) {
        pthread_mutex_unlock(&g_mu);
        return vg_status_set(st, VG_FAILED_PRECONDITION, "vg_dist_init after vg_dist_finalize: MPI cannot start twice");
    }
    const char *var = launcher_var();
    if (!env_ms("VIGIL_COLLECTIVE_TIMEOUT_MS", g.timeout_set, &g.timeout_ms, "no timeout", st) ||
        !env_ms("VIGIL_HEARTBEAT_TIMEOUT_MS", g.hb_timeout_set, &g.hb_timeout_ms, "no heartbeats", st)) {
        pthread_mutex_unlock(&g_mu);
        return VG_INVALID_ARGUMENT;
    }
    g.rank = 0;
    g.size = 1;
    g.local_rank = 0;
    g.local_size = 1;
#ifndef VIGIL_HAVE_MPI
    if (var && getenv(var) && !(strcmp(var, "OMPI_COMM_WORLD_SIZE") == 0 && strcmp(getenv(var), "1") == 0) &&
        !(strcmp(var, "PMI_SIZE") == 0 && strcmp(getenv(var), "1") == 0)) {
        pthread_mutex_unlock(&g_mu);
        return vg_status_set(st, VG_UNIMPLEMENTED,
                             "started by mpirun (%s=%s) but this vigil was built without MPI: "
                             "rebuild with -DVIGIL_MPI=ON (needs an MPI such as libopenmpi-dev)",
                             var, getenv(var));
    }
#else
    if (var) {
        int provided = 0, inited = 0;
        MPI_Initialized(&inited);
        if (!inited) {
            if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
                pthread_mutex_unlock(&g_mu);
                return vg_status_set(st, VG_UNAVAILABLE, "MPI_Init_thread failed");
            }
            g.mpi = true;
        } else {
            MPI_Query_thread(&provided);
        }
        if (provided < MPI_THREAD_SERIALIZED) {
            pthread_mutex_unlock(&g_mu);
            return vg_status_set(st, VG_UNAVAILABLE, "the MPI library gives thread level %d, vigil needs MPI_THREAD_SERIALIZED",
                                 provided);
        }
        MPI_Comm_dup(MPI_COMM_WORLD, &g.comm);
        g.have_comm = true;
        MPI_Comm_set_errhandler(g.comm, MPI_ERRORS_RETURN);
        MPI_Comm_rank(g.comm, &g.rank);
        MPI_Comm_size(g.comm, &g.size);
        g.hosts = vg__calloc((size_t)g.size, sizeof *g.hosts); /* for the timeout's message */
        if (g.hosts) {
            char name[MPI_MAX_PROCESSOR_NAME] = "";
            int len = 0;
            MPI_Get_processor_name(name, &len);
            snprintf(g.hosts[g.rank], sizeof g.hosts[0], "%s", name);
            MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, g.hosts, (int)sizeof g.hosts[0], MPI_CHAR, g.comm);
        }
        if (g.size > 1) heartbeat_setup();
        MPI_Comm local = MPI_COMM_NULL;
        bool have_local = MPI_Comm_split_type(g.comm, MPI_COMM_TYPE_SHARED, g.rank, MPI_INFO_NULL, &local) == MPI_SUCCESS;
        if (have_local) {
            MPI_Comm_rank(local, &g.local_rank);
            MPI_Comm_size(local, &g.local_size);
        }
        if (g.size > 1) shm_setup(have_local ? local : MPI_COMM_NULL);
        if (have_local && !S.have_local) MPI_Comm_free(&local);
        if (g.size > 1) {
            g.stop = false;
            if (pthread_create(&g.thread, NULL, comm_main, NULL) != 0) {
                pthread_mutex_unlock(&g_mu);
                return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "cannot start the communication thread");
            }
            g.thread_up = true;
        }
    }
#endif
    (void)var;
    g.state = ST_UP;
    pthread_mutex_unlock(&g_mu);
    return VG_OK;
}

bool vg_dist_initialized(void) {
    pthread_mutex_lock(&g_mu);
    bool up = g.state == ST_UP;
    pthread_mutex_unlock(&g_mu);
    return up;
}

int vg_dist_rank(void) { return g.rank; }
int vg_dist_size(void) { return g.size ? g.size : 1; }
int vg_dist_local_rank(void) { return g.local_rank; }
int vg_dist_local_size(void) { return g.local_size ? g.local_size : 1; }

vg_code vg_dist_barrier(vg_status *st) { return vg__comm_run(VG__COMM_BARRIER, NULL, 0, VG_FLOAT, VG_REDUCE_SUM, 0, st); }

vg_code vg_dist_finalize(vg_status *st) {
    pthread_mutex_lock(&g_mu);
    if (g.state != ST_UP) {
        pthread_mutex_unlock(&g_mu);
        return VG_OK;
    }
    g.state = ST_DOWN;
    bool thread = g.thread_up;
    g.stop = true;
    pthread_cond_broadcast(&g_cv);
    /* The thread drains the queue and exits; a collective whose peers never come
     * (a rank that failed) would keep it in MPI forever: give up after 10 s and leave
     * MPI to the process's exit rather than hang here. */
    int64_t until = vg__now_ns() + 10 * 1000000000LL;
    while (thread && (g.busy || g.head) && vg__now_ns() < until) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&g_cv, &g_mu, &ts);
    }
    if (thread && (g.busy || g.head)) {
        pthread_detach(g.thread);
        g.thread_up = false;
        pthread_mutex_unlock(&g_mu);
        return vg_status_set(st, VG_UNAVAILABLE,
                             "vg_dist_finalize: a collective is still waiting for a peer; MPI was not finalized");
    }
    pthread_mutex_unlock(&g_mu);
    if (thread) pthread_join(g.thread, NULL);
    pthread_mutex_lock(&g_mu);
    g.thread_up = false;
    buffers_drop();
    pthread_mutex_unlock(&g_mu);
#ifdef VIGIL_HAVE_MPI
    char msg[200];
    if (g.have_comm && !g.broken && g.size > 1 && !quiet_barrier(msg, sizeof msg)) {
        pthread_mutex_lock(&g_mu);
        g.broken = true; /* MPI is left to the process's exit, as for a peer that never came */
        pthread_mutex_unlock(&g_mu);
        return vg_status_set(st, VG_UNAVAILABLE, "%s; MPI was not finalized", msg);
    }
    if (!g.broken) shm_teardown();
    if (g.have_comm && !g.broken) MPI_Comm_free(&g.comm);
    g.have_comm = false;
    if (g.mpi && !g.broken) MPI_Finalize();
#endif
    vg__hb_stop();
    vg__free(g.hosts);
    g.hosts = NULL;
    return VG_OK;
}

vg_code vg_dist_set_heartbeat_timeout_ms(int64_t ms, vg_status *st) {
    if (ms < 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "heartbeat timeout %lld ms: must be >= 0", (long long)ms);
    pthread_mutex_lock(&g_mu);
    if (g.state != ST_NONE) {
        pthread_mutex_unlock(&g_mu);
        return vg_status_set(st, VG_FAILED_PRECONDITION,
                             "vg_dist_set_heartbeat_timeout_ms: call it before vg_dist_init (heartbeats start there)");
    }
    g.hb_timeout_ms = ms;
    g.hb_timeout_set = true;
    pthread_mutex_unlock(&g_mu);
    return VG_OK;
}

bool vg_dist_heartbeats_on(void) { return vg__hb_on(); }

bool vg_dist_world_broken(void) {
    pthread_mutex_lock(&g_mu);
    bool b = g.broken;
    pthread_mutex_unlock(&g_mu);
    return b;
}

vg_code vg_dist_set_collective_timeout_ms(int64_t ms, vg_status *st) {
    if (ms < 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "collective timeout %lld ms: must be >= 0", (long long)ms);
    pthread_mutex_lock(&g_mu);
    g.timeout_ms = ms;
    g.timeout_set = true;
    pthread_mutex_unlock(&g_mu);
    return VG_OK;
}

int64_t vg_dist_collective_timeout_ms(void) {
    pthread_mutex_lock(&g_mu);
    int64_t ms = g.timeout_ms;
    pthread_mutex_unlock(&g_mu);
    return ms;
}

static vg_code check_buf(const void *buf, int64_t count, vg_status *st) {
    if (count < 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "negative element count %lld", (long long)count);
    if (!buf && count > 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "NULL buffer for %lld elements", (long long)count);
    return VG_OK;
}

vg_code vg_dist_allreduce(void *buf, int64_t count, vg_dtype dt, vg_reduce_op op, vg_status *st) {
    if (check_buf(buf, count, st) != VG_OK) return st->code;
    if (dt_size(dt) == 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_dist_allreduce of dtype %d: only float32, float64, int32, int64",
                             (int)dt);
    if ((unsigned)op > VG_REDUCE_MAX) return vg_status_set(st, VG_INVALID_ARGUMENT, "unknown reduction %d", (int)op);
    return vg__comm_run(VG__COMM_ALLREDUCE, buf, count, dt, op, 0, st);
}

vg_code vg_dist_broadcast(void *buf, int64_t bytes, int root, vg_status *st) {
    if (check_buf(buf, bytes, st) != VG_OK) return st->code;
    if (root < 0 || root >= vg_dist_size())
        return vg_status_set(st, VG_INVALID_ARGUMENT, "broadcast root %d outside [0, %d)", root, vg_dist_size());
    return vg__comm_run(VG__COMM_BCAST, buf, bytes, VG_UINT8, VG_REDUCE_SUM, root, st);
}

/* ---- point-to-point (vigil/distributed.h) ------------------------------------------- */

static vg_code p2p_check(int peer, bool any_ok, int tag, const char *what, vg_status *st) {
    if (!vg_dist_initialized()) return vg_status_set(st, VG_FAILED_PRECONDITION, "%s: vg_dist_init has not been called", what);
    if (tag < 0 || tag > VG_DIST_MAX_TAG)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: tag %d outside [0, %d]", what, tag, VG_DIST_MAX_TAG);
    if (vg_dist_size() < 2)
        return vg_status_set(st, VG_FAILED_PRECONDITION, "%s: a world of one rank has no peer", what);
    if ((peer < 0 && !(any_ok && peer == VG_DIST_ANY_SOURCE)) || peer >= vg_dist_size() || peer == vg_dist_rank())
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: rank %d is not a peer of rank %d in a world of %d", what, peer,
                             vg_dist_rank(), vg_dist_size());
    return VG_OK;
}

vg_code vg_dist_send(const void *buf, int64_t bytes, int dest, int tag, vg_status *st) {
    if (p2p_check(dest, false, tag, "vg_dist_send", st) != VG_OK) return st->code;
    if (bytes < 0 || bytes > INT32_MAX || (!buf && bytes > 0))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_dist_send: %lld bytes from %p (0 to 2^31-1 bytes)",
                             (long long)bytes, buf);
    void *copy = vg__malloc(bytes > 0 ? (size_t)bytes : 1);
    if (!copy) return VG_OOM(st, "a message");
    if (bytes) memcpy(copy, buf, (size_t)bytes);
    vg__comm_req *r = vg__comm_req_new(VG__COMM_SEND, copy, bytes, VG_UINT8, VG_REDUCE_SUM, dest);
    if (!r) {
        vg__free(copy);
        return VG_OOM(st, "a send request");
    }
    r->tag = tag;
    vg_code rc = vg__comm_submit(r, st);
    if (rc == VG_OK) rc = vg__comm_wait(r, NULL, NULL, 0, st);
    vg__comm_req_free(r);
    return rc;
}

vg_code vg_dist_recv(int source, int tag, bool wait, void **out, int64_t *bytes, int *from, vg_status *st) {
    if (out) *out = NULL;
    if (bytes) *bytes = 0;
    if (from) *from = -1;
    if (!out) return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_dist_recv: NULL out");
    if (p2p_check(source, true, tag, "vg_dist_recv", st) != VG_OK) return st->code;
    vg__comm_req *r = vg__comm_req_new(VG__COMM_RECV, NULL, 0, VG_UINT8, VG_REDUCE_SUM, source);
    if (!r) return VG_OOM(st, "a receive request");
    r->tag = tag;
    r->wait = wait;
    vg_code rc = vg__comm_submit(r, st);
    if (rc == VG_OK) rc = vg__comm_wait(r, NULL, NULL, 0, st);
    if (rc == VG_OK && r->mismatch >= 0) {
        *out = r->gathered;
        r->gathered = NULL;
        if (bytes) *bytes = r->total;
        if (from) *from = r->mismatch;
    }
    vg__comm_req_free(r);
    return rc;
}

vg_code vg_dist_flush_sends(vg_status *st) {
    if (!vg_dist_initialized()) return vg_status_set(st, VG_FAILED_PRECONDITION, "vg_dist_flush_sends: vg_dist_init has not been called");
    if (vg_dist_size() < 2) return VG_OK;
    return vg__comm_run(VG__COMM_FLUSH, NULL, 0, VG_UINT8, VG_REDUCE_SUM, 0, st);
}
