/*
 * comm.c - the MPI world and its communication thread (see comm.h).
 *
 * One thread makes every MPI call after init, taking requests from a FIFO; a request
 * that fails marks the world broken (MPI has no fault tolerance in Open MPI 4.1: a
 * dead peer ends the job, and until mpirun kills us every later request fails with
 * UNAVAILABLE instead of hanging). Without VIGIL_HAVE_MPI, or when the process was not
 * started by mpirun, the world has one rank and requests complete on the caller.
 */
#include "dist/comm.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef VIGIL_HAVE_MPI
#include <mpi.h>
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
    vg_tensor *held[2];
    void *gathered;       /* ALLGATHER result (vg__malloc) */
    int64_t *counts;      /* ALLGATHER per-rank byte counts */
    int64_t total;
    int mismatch;         /* CHECK */
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
#ifdef VIGIL_HAVE_MPI
    MPI_Comm comm;
    bool have_comm;
#endif
} g = {0}; /* size and local_size 0 read as 1 */
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
void vg__comm_req_set_send(vg__comm_req *r, const void *sendbuf) { r->sendbuf = sendbuf; }
void vg__comm_req_hold(vg__comm_req *r, vg_tensor *t) {
    for (int i = 0; i < 2; i++)
        if (!r->held[i]) {
            r->held[i] = vg_tensor_ref(t);
            return;
        }
}

const void *vg__comm_req_gathered(const vg__comm_req *r, const int64_t **counts, int64_t *total) {
    if (counts) *counts = r->counts;
    if (total) *total = r->total;
    return r->gathered;
}

int vg__comm_req_check_mismatch(const vg__comm_req *r) { return r->mismatch; }

static void req_destroy(vg__comm_req *r) {
    vg__comm_buffer_put(r->owned);
    for (int i = 0; i < 2; i++) vg_tensor_free(r->held[i]);
    vg__free(r->gathered);
    vg__free(r->counts);
    vg__free(r);
}

void vg__comm_req_free(vg__comm_req *r) {
    if (!r) return;
    pthread_mutex_lock(&g_mu);
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

/* A world of one rank. */
static void exec_local(vg__comm_req *r) {
    r->code = VG_OK;
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

static bool mpi_ok(vg__comm_req *r, int rc, const char *what) {
    if (rc == MPI_SUCCESS) return true;
    char es[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, es, &len);
    r->code = VG_UNAVAILABLE;
    snprintf(r->msg, sizeof r->msg, "%s failed: %.*s (a peer rank is gone or MPI failed)", what, len, es);
    return false;
}

/* Large messages in chunks MPI's int counts can carry. */
#define CHUNK ((int64_t)1 << 30)

static void exec_mpi(vg__comm_req *r) {
    r->code = VG_OK;
    switch (r->kind) {
    case VG__COMM_ALLREDUCE: {
        size_t es = dt_size(r->dt);
        int64_t step = CHUNK / (int64_t)es;
        for (int64_t off = 0; off < r->count; off += step) {
            int64_t n = r->count - off < step ? r->count - off : step;
            const void *send = r->sendbuf ? (const char *)r->sendbuf + off * (int64_t)es : MPI_IN_PLACE;
            if (!mpi_ok(r, MPI_Allreduce(send, (char *)r->buf + off * (int64_t)es, (int)n, mpi_type(r->dt),
                                         mpi_op(r->op), g.comm), "MPI_Allreduce"))
                return;
        }
        return;
    }
    case VG__COMM_BCAST:
        for (int64_t off = 0; off < r->count; off += CHUNK) {
            int64_t n = r->count - off < CHUNK ? r->count - off : CHUNK;
            if (!mpi_ok(r, MPI_Bcast((char *)r->buf + off, (int)n, MPI_BYTE, r->root, g.comm), "MPI_Bcast")) return;
        }
        return;
    case VG__COMM_BARRIER:
        mpi_ok(r, MPI_Barrier(g.comm), "MPI_Barrier");
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
        if (mpi_ok(r, MPI_Allreduce(MPI_IN_PLACE, both, (int)(2 * n), MPI_INT64_T, MPI_MAX, g.comm), "MPI_Allreduce")) {
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
        if (mpi_ok(r, MPI_Allgather(&mine, 1, MPI_INT64_T, r->counts, 1, MPI_INT64_T, g.comm), "MPI_Allgather")) {
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
                    mpi_ok(r, MPI_Allgatherv(r->buf, (int)mine, MPI_BYTE, r->gathered, cnt, disp, MPI_BYTE, g.comm),
                           "MPI_Allgatherv");
            }
        }
        vg__free(cnt);
        vg__free(disp);
        return;
    }
    }
}

static void *comm_main(void *arg) {
    (void)arg;
    pthread_mutex_lock(&g_mu);
    for (;;) {
        while (!g.head && !g.stop) pthread_cond_wait(&g_cv, &g_mu);
        if (!g.head) break; /* stop with an empty queue */
        vg__comm_req *r = g.head;
        g.head = r->next;
        if (!g.head) g.tail = NULL;
        bool broken = g.broken;
        g.busy = true;
        pthread_mutex_unlock(&g_mu);
        if (broken)
            req_fail(r, VG_UNAVAILABLE, g.broken_msg);
        else
            exec_mpi(r);
        pthread_mutex_lock(&g_mu);
        if (r->code == VG_UNAVAILABLE && !g.broken) {
            g.broken = true;
            snprintf(g.broken_msg, sizeof g.broken_msg, "an earlier collective failed: %.120s", r->msg);
        }
        r->done = true;
        g.busy = false;
        bool last = --r->refs == 0;
        pthread_cond_broadcast(&g_cv);
        if (last) {
            pthread_mutex_unlock(&g_mu);
            req_destroy(r);
            pthread_mutex_lock(&g_mu);
        }
    }
    pthread_mutex_unlock(&g_mu);
    return NULL;
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
        MPI_Comm local;
        if (MPI_Comm_split_type(g.comm, MPI_COMM_TYPE_SHARED, g.rank, MPI_INFO_NULL, &local) == MPI_SUCCESS) {
            MPI_Comm_rank(local, &g.local_rank);
            MPI_Comm_size(local, &g.local_size);
            MPI_Comm_free(&local);
        }
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
    if (g.have_comm && !g.broken) MPI_Comm_free(&g.comm);
    g.have_comm = false;
    if (g.mpi && !g.broken) MPI_Finalize();
#endif
    return VG_OK;
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
