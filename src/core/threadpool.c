/*
 * threadpool.c - worker threads with a FIFO task queue, and parallel_for.
 *
 * parallel_for hands out chunks through an atomic counter; the caller grabs chunks
 * too, so the call completes even if no worker ever picks up its task (workers may be
 * blocked in queue ops of other runs). The job lives on the heap with a reference
 * count so a worker that starts late never touches the caller's stack.
 */
#include "threadpool.h"
#include <pthread.h>
#include <stdatomic.h>

typedef struct task {
    vg__task_fn fn;
    void *arg;
} task;

struct vg__pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    task *q;
    int qcap, qhead, qlen;
    bool stop;
    int n;
    pthread_t *threads;
};

static _Thread_local int tls_worker_id;

typedef struct worker_arg {
    vg__pool *p;
    int id;
} worker_arg;

static void *worker(void *a) {
    worker_arg wa = *(worker_arg *)a;
    vg__free(a);
    vg__pool *p = wa.p;
    tls_worker_id = wa.id;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->qlen && !p->stop) pthread_cond_wait(&p->cv, &p->mu);
        if (!p->qlen && p->stop) break;
        task t = p->q[p->qhead];
        p->qhead = (p->qhead + 1) % p->qcap;
        p->qlen--;
        pthread_mutex_unlock(&p->mu);
        t.fn(t.arg);
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

vg__pool *vg__pool_new(int nthreads) {
    vg__pool *p = vg__calloc(1, sizeof *p);
    if (!p) return NULL;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
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
int vg__pool_thread_id(void) { return tls_worker_id; }

bool vg__pool_submit(vg__pool *p, vg__task_fn fn, void *arg) {
    if (!p || !p->n) return false;
    pthread_mutex_lock(&p->mu);
    if (p->qlen == p->qcap) {
        int nc = p->qcap ? p->qcap * 2 : 64;
        task *nq = vg__malloc(sizeof(task) * (size_t)nc);
        if (!nq) { pthread_mutex_unlock(&p->mu); return false; }
        for (int i = 0; i < p->qlen; i++) nq[i] = p->q[(p->qhead + i) % p->qcap];
        vg__free(p->q);
        p->q = nq;
        p->qcap = nc;
        p->qhead = 0;
    }
    p->q[(p->qhead + p->qlen) % p->qcap] = (task){fn, arg};
    p->qlen++;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return true;
}

typedef struct pf_job {
    atomic_int refs;
    atomic_long next;   /* next chunk to take */
    atomic_long done;   /* chunks finished */
    long nchunks;
    int64_t n;
    vg__chunk_fn fn;
    void *arg;
    pthread_mutex_t mu;
    pthread_cond_t cv;
} pf_job;

static void pf_release(pf_job *j) {
    if (atomic_fetch_sub(&j->refs, 1) == 1) {
        pthread_mutex_destroy(&j->mu);
        pthread_cond_destroy(&j->cv);
        vg__free(j);
    }
}

static void pf_work(pf_job *j) {
    for (;;) {
        long c = atomic_fetch_add(&j->next, 1);
        if (c >= j->nchunks) break;
        int64_t b = j->n * c / j->nchunks, e = j->n * (c + 1) / j->nchunks;
        if (e > b) j->fn(j->arg, b, e);
        if (atomic_fetch_add(&j->done, 1) + 1 == j->nchunks) {
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

void vg__pool_parallel_for(vg__pool *p, int64_t n, int max_parts, vg__chunk_fn fn, void *arg) {
    if (n <= 0) return;
    int parts = max_parts;
    if (parts > vg__pool_size(p) + 1) parts = vg__pool_size(p) + 1;
    if (parts > n) parts = (int)n;
    if (parts <= 1) { fn(arg, 0, n); return; }
    pf_job *j = vg__malloc(sizeof *j);
    if (!j) { fn(arg, 0, n); return; }
    atomic_init(&j->refs, 1);
    atomic_init(&j->next, 0);
    atomic_init(&j->done, 0);
    j->nchunks = parts;
    j->n = n;
    j->fn = fn;
    j->arg = arg;
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    for (int i = 0; i < parts - 1; i++) {
        atomic_fetch_add(&j->refs, 1);
        if (!vg__pool_submit(p, pf_task, j)) { atomic_fetch_sub(&j->refs, 1); break; }
    }
    pf_work(j);
    pthread_mutex_lock(&j->mu);
    while (atomic_load(&j->done) < j->nchunks) pthread_cond_wait(&j->cv, &j->mu);
    pthread_mutex_unlock(&j->mu);
    pf_release(j);
}
