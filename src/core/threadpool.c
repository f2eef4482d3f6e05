/*
 * threadpool.c - worker threads with a FIFO task queue, and parallel_for.
 *
 * Hand-off latency is what limits small kernels: on a VM a futex wake-up costs 5-50 us,
 * more than a whole element-wise kernel of an MLP step. So, as OpenMP runtimes and
 * Eigen's non-blocking pool do, an idle worker spins for a bounded time (the spin
 * window) watching the queue's atomic length before it sleeps on the condition
 * variable; a submit signals only when some worker sleeps. The window is long (1 ms,
 * VG_POOL_SPIN_ACTIVE_US) while a session run that may hand work to the pool is in
 * progress (vg__pool_run_begin/end), and short (50 us, VG_POOL_SPIN_US) otherwise:
 * inside a training step a worker that fell asleep between two split kernels costs
 * the next split its wake-up (on a VM an IPI to a halted vCPU, 5-50 us or more when
 * the host is busy; ~13 per CNN step at 2 threads with a 50 us window, ~3 with 1 ms),
 * while after the run the short window soon gives the core back.
 * A spinner does not call sched_yield: under a fair scheduler a yield hands the core
 * to any runnable thread for the rest of a time slice (a background compile included),
 * which measured as the worker almost never catching the work it spun for. The window
 * bounds the waste instead: a pool with nothing to do goes back to sleep after one
 * window, and freeing a pool wakes spinners and sleepers alike.
 *
 * parallel_for hands out chunks through an atomic counter; the caller grabs chunks
 * too, so the call completes even if no worker ever picks up its task (workers may be
 * blocked in queue ops of other runs). The job lives on the heap with a reference
 * count so a worker that starts late never touches the caller's stack. The caller
 * waits for the chunks other threads took by spinning for up to one window, then on
 * the job's condition variable (the finisher signals only when the caller sleeps).
 */
#include "threadpool.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

typedef struct task {
    vg__task_fn fn;
    void *arg;
} task;

struct vg__pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    task *q; /* ring buffer, under mu */
    int qcap, qhead, qlen;
    atomic_int qcount; /* == qlen, read without the lock by spinning workers */
    int nsleep;        /* workers waiting on cv (under mu) */
    bool stop;         /* under mu */
    atomic_bool astop; /* == stop, for spinners */
    int n;
    int64_t spin_ns;        /* the idle window */
    int64_t spin_active_ns; /* the window while a run is in progress */
    atomic_int active;      /* runs in progress (vg__pool_run_begin/end) */
    pthread_t *threads;
};

static _Thread_local int tls_worker_id;

int64_t vg__pool_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* A window in ns from the environment variable name (0..100000 us), or -1 when it is
 * unset or unparsable. */
static int64_t env_window_ns(const char *name) {
    const char *e = getenv(name);
    if (e && *e) {
        char *end;
        long v = strtol(e, &end, 10);
        if (!*end && v >= 0 && v <= 100000) return (int64_t)v * 1000;
    }
    return -1;
}

/* The windows: idle VG_POOL_SPIN_US or 50 us; during runs VG_POOL_SPIN_ACTIVE_US, else
 * VG_POOL_SPIN_US when that is set (so VG_POOL_SPIN_US=0 still means no spinning at
 * all), else 1 ms. */
static void spin_windows(int64_t *idle, int64_t *active) {
    int64_t i = env_window_ns("VG_POOL_SPIN_US"), a = env_window_ns("VG_POOL_SPIN_ACTIVE_US");
    *idle = i >= 0 ? i : 50000;
    *active = a >= 0 ? a : i >= 0 ? i : 1000000;
}

static int64_t window_ns(const vg__pool *p) {
    return atomic_load_explicit(&((vg__pool *)p)->active, memory_order_relaxed) > 0 ? p->spin_active_ns : p->spin_ns;
}

/* Spins until cond(arg) holds or the pool's window (re-read at each clock read, so
 * the end of the last run shortens it at once) ends; true if the condition held. The
 * clock is read every 16 pause steps. */
typedef bool (*spin_cond)(const void *arg);
static bool spin_until(spin_cond cond, const void *arg, const vg__pool *p) {
    if (window_ns(p) <= 0) return cond(arg);
    int64_t t0 = 0;
    for (unsigned it = 0;; it++) {
        if (cond(arg)) return true;
        vg__spin_pause();
        if ((it & 15) == 15) {
            int64_t t = vg__pool_now_ns();
            if (!t0) t0 = t;
            else if (t - t0 > window_ns(p)) return cond(arg);
        }
    }
}

static bool queue_or_stop(const void *a) {
    const vg__pool *p = a;
    return atomic_load_explicit(&p->qcount, memory_order_acquire) > 0 ||
           atomic_load_explicit(&p->astop, memory_order_relaxed);
}

/* Takes the first queued task whose function is only (any if NULL); lock held. */
static bool take_locked(vg__pool *p, vg__task_fn only, task *out) {
    for (int i = 0; i < p->qlen; i++) {
        int k = (p->qhead + i) % p->qcap;
        if (only && p->q[k].fn != only) continue;
        *out = p->q[k];
        for (int m = i; m > 0; m--) /* close the gap from the head side */
            p->q[(p->qhead + m) % p->qcap] = p->q[(p->qhead + m - 1) % p->qcap];
        p->qhead = (p->qhead + 1) % p->qcap;
        p->qlen--;
        atomic_fetch_sub_explicit(&p->qcount, 1, memory_order_relaxed);
        return true;
    }
    return false;
}

typedef struct worker_arg {
    vg__pool *p;
    int id;
} worker_arg;

static void *worker(void *a) {
    worker_arg wa = *(worker_arg *)a;
    vg__free(a);
    vg__pool *p = wa.p;
    tls_worker_id = wa.id;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        if (!p->qlen && !p->stop) {
            pthread_mutex_unlock(&p->mu);
            /* idle: spin for one window, then sleep */
            spin_until(queue_or_stop, p, p);
            pthread_mutex_lock(&p->mu);
            while (!p->qlen && !p->stop) {
                p->nsleep++;
                pthread_cond_wait(&p->cv, &p->mu);
                p->nsleep--;
            }
        }
        if (!p->qlen) { /* stop, and nothing left to run */
            pthread_mutex_unlock(&p->mu);
            break;
        }
        task t = {0}; /* filled by take_locked: qlen > 0 here */
        take_locked(p, NULL, &t);
        pthread_mutex_unlock(&p->mu);
        t.fn(t.arg);
    }
    return NULL;
}

vg__pool *vg__pool_new(int nthreads) {
    vg__pool *p = vg__calloc(1, sizeof *p);
    if (!p) return NULL;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    atomic_init(&p->qcount, 0);
    atomic_init(&p->astop, false);
    spin_windows(&p->spin_ns, &p->spin_active_ns);
    atomic_init(&p->active, 0);
    if (nthreads > 0) {
        p->threads = vg__calloc((size_t)nthreads, sizeof(pthread_t));
        if (!p->threads) { vg__pool_free(p); return NULL; }
    }
    for (int i = 0; i < nthreads; i++) {
        worker_arg *wa = vg__malloc(sizeof *wa);
        if (!wa) { vg__pool_free(p); return NULL; }
        wa->p = p;
        wa->id = i + 1;
        if (pthread_create(&p->threads[i], NULL, worker, wa) != 0) {
            vg__free(wa);
            vg__pool_free(p);
            return NULL;
        }
        p->n++;
    }
    return p;
}

void vg__pool_free(vg__pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    atomic_store(&p->astop, true);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n; i++) pthread_join(p->threads[i], NULL);
    vg__free(p->threads);
    vg__free(p->q);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    vg__free(p);
}

int vg__pool_size(const vg__pool *p) { return p ? p->n : 0; }
int64_t vg__pool_spin_ns(const vg__pool *p) { return p ? window_ns(p) : 0; }

void vg__pool_run_begin(vg__pool *p) {
    if (p) atomic_fetch_add_explicit(&p->active, 1, memory_order_relaxed);
}

void vg__pool_run_end(vg__pool *p) {
    if (p) atomic_fetch_sub_explicit(&p->active, 1, memory_order_relaxed);
}

static bool run_one_of(vg__pool *p, vg__task_fn only) {
    if (!p || atomic_load_explicit(&p->qcount, memory_order_acquire) <= 0) return false;
    task t;
    pthread_mutex_lock(&p->mu);
    bool got = take_locked(p, only, &t);
    pthread_mutex_unlock(&p->mu);
    if (got) t.fn(t.arg);
    return got;
}

bool vg__pool_run_one(vg__pool *p) { return run_one_of(p, NULL); }
int vg__pool_thread_id(void) { return tls_worker_id; }

/* Queues count copies of fn(arg); returns how many were queued and sets *wake to the
 * sleeping workers to signal (lock held). */
static int push_locked(vg__pool *p, vg__task_fn fn, void *arg, int count, int *wake) {
    if (p->qlen + count > p->qcap) {
        int nc = p->qcap ? p->qcap * 2 : 64;
        while (nc < p->qlen + count) nc *= 2;
        task *nq = vg__malloc(sizeof(task) * (size_t)nc);
        if (!nq) return 0;
        for (int i = 0; i < p->qlen; i++) nq[i] = p->q[(p->qhead + i) % p->qcap];
        vg__free(p->q);
        p->q = nq;
        p->qcap = nc;
        p->qhead = 0;
    }
    for (int i = 0; i < count; i++) p->q[(p->qhead + p->qlen + i) % p->qcap] = (task){fn, arg};
    p->qlen += count;
    atomic_fetch_add_explicit(&p->qcount, count, memory_order_release);
    /* spinning workers see qcount; sleeping ones need a signal each */
    *wake = p->nsleep < count ? p->nsleep : count;
    return count;
}

static int submit_n(vg__pool *p, vg__task_fn fn, void *arg, int count) {
    if (!p || !p->n || count <= 0) return 0;
    int wake = 0;
    pthread_mutex_lock(&p->mu);
    int k = p->stop ? 0 : push_locked(p, fn, arg, count, &wake);
    pthread_mutex_unlock(&p->mu);
    /* Signalled after the unlock, so a woken worker does not block at once on the
     * mutex this thread still holds. No wake-up is lost: the workers counted in nsleep
     * entered pthread_cond_wait under the mutex, before the push. */
    if (wake >= p->n) pthread_cond_broadcast(&p->cv);
    else
        for (int i = 0; i < wake; i++) pthread_cond_signal(&p->cv);
    return k;
}

bool vg__pool_submit(vg__pool *p, vg__task_fn fn, void *arg) { return submit_n(p, fn, arg, 1) == 1; }

typedef struct pf_job {
    atomic_int refs;
    atomic_long next;      /* next chunk to take */
    atomic_long done;      /* chunks finished */
    atomic_bool sleeping;  /* the caller waits on cv */
    long nchunks;
    int64_t n;
    vg__chunk_fn fn;
    vg__slot_chunk_fn sfn; /* instead of fn: pieces claimed with a slot per thread */
    atomic_int nslots;     /* slots handed out */
    void *arg;
    pthread_mutex_t mu;
    pthread_cond_t cv;
} pf_job;

static void pf_release(pf_job *j) {
    if (atomic_fetch_sub_explicit(&j->refs, 1, memory_order_acq_rel) == 1) {
        pthread_mutex_destroy(&j->mu);
        pthread_cond_destroy(&j->cv);
        vg__free(j);
    }
}

static void pf_work(pf_job *j) {
    int slot = -1;
    for (;;) {
        long c = atomic_fetch_add(&j->next, 1);
        if (c >= j->nchunks) break;
        int64_t b = j->n * c / j->nchunks, e = j->n * (c + 1) / j->nchunks;
        if (j->sfn) {
            if (slot < 0) slot = atomic_fetch_add_explicit(&j->nslots, 1, memory_order_relaxed);
            if (e > b) j->sfn(j->arg, b, e, slot);
        } else if (e > b) {
            j->fn(j->arg, b, e);
        }
        /* seq_cst pairs with the caller's store of sleeping before its load of done */
        if (atomic_fetch_add(&j->done, 1) + 1 == j->nchunks && atomic_load(&j->sleeping)) {
            pthread_mutex_lock(&j->mu);
            pthread_cond_broadcast(&j->cv);
            pthread_mutex_unlock(&j->mu);
        }
    }
}

static void pf_task(void *a) {
    pf_job *j = a;
    pf_work(j);
    pf_release(j);
}

bool vg__pool_help(vg__pool *p) { return run_one_of(p, pf_task); }

static bool pf_finished(const void *a) {
    const pf_job *j = a;
    return atomic_load_explicit(&((pf_job *)j)->done, memory_order_acquire) >= j->nchunks;
}

/* The parallel-for behind both entry points: nchunks pieces, parts participants. */
static void pf_run(vg__pool *p, int64_t n, int parts, int64_t nchunks, vg__chunk_fn fn, vg__slot_chunk_fn sfn,
                   void *arg) {
    pf_job *j = vg__malloc(sizeof *j);
    if (!j) {
        if (sfn) sfn(arg, 0, n, 0);
        else fn(arg, 0, n);
        return;
    }
    atomic_init(&j->next, 0);
    atomic_init(&j->done, 0);
    atomic_init(&j->sleeping, false);
    atomic_init(&j->nslots, 0);
    j->nchunks = (long)nchunks;
    j->n = n;
    j->fn = fn;
    j->sfn = sfn;
    j->arg = arg;
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    /* one reference per queued task plus the caller's; queued before the push */
    atomic_init(&j->refs, parts);
    int queued = submit_n(p, pf_task, j, parts - 1);
    if (queued < parts - 1) atomic_fetch_sub(&j->refs, parts - 1 - queued);
    pf_work(j);
    if (!spin_until(pf_finished, j, p)) {
        pthread_mutex_lock(&j->mu);
        atomic_store(&j->sleeping, true);
        while (atomic_load(&j->done) < j->nchunks) pthread_cond_wait(&j->cv, &j->mu);
        pthread_mutex_unlock(&j->mu);
    }
    pf_release(j);
}

void vg__pool_parallel_for(vg__pool *p, int64_t n, int max_parts, vg__chunk_fn fn, void *arg) {
    vg__pool_parallel_for_n(p, n, max_parts, 0, fn, arg); /* one piece per thread */
}

void vg__pool_parallel_for_n(vg__pool *p, int64_t n, int max_parts, int64_t nchunks, vg__chunk_fn fn, void *arg) {
    if (n <= 0) return;
    int parts = max_parts;
    if (parts > vg__pool_size(p) + 1) parts = vg__pool_size(p) + 1;
    if (parts > n) parts = (int)n;
    if (parts <= 1) { fn(arg, 0, n); return; }
    if (nchunks > n) nchunks = n;
    if (nchunks < parts) nchunks = parts;
    pf_run(p, n, parts, nchunks, fn, NULL, arg);
}

void vg__pool_parallel_for_slots(vg__pool *p, int64_t n, int max_parts, int64_t nchunks, vg__slot_chunk_fn fn,
                                 void *arg) {
    if (n <= 0) return;
    int parts = max_parts;
    if (parts > vg__pool_size(p) + 1) parts = vg__pool_size(p) + 1;
    if (nchunks > n) nchunks = n;
    if (nchunks < 1) nchunks = 1;
    if (parts > nchunks) parts = (int)nchunks;
    if (parts <= 1) { fn(arg, 0, n, 0); return; }
    pf_run(p, n, parts, nchunks, NULL, fn, arg);
}
