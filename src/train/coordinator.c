/*
 * coordinator.c - tf.train.Coordinator and LooperThread on pthreads.
 *
 * One mutex guards everything: the stop flag (mirrored in an atomic for a lock-free
 * should_stop), the first stored error, the "joined" state and the list of
 * registered threads. One condition variable is signalled on a stop request and
 * whenever a thread finishes, so wait_for_stop and join never poll.
 *
 * Lifetime: each running thread holds a reference on the coordinator (and owns its
 * record once it is detached), so a thread left running by join (a straggler) or by
 * vg_coord_free never touches freed memory: the last one out frees the coordinator.
 */
#include "train_util.h"
#include "vigil/coordinator.h"
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

typedef struct coord_thread {
    struct coord_thread *next;
    vg_coord *c;
    pthread_t tid;
    char *name;
    vg_coord_thread_fn fn;     /* plain thread */
    vg_coord_looper_fn looper; /* looper thread (fn == NULL) */
    double interval;
    void *payload;
    bool done;                 /* guarded by c->mu */
    bool detached;             /* guarded by c->mu: the thread frees its record */
} coord_thread;

struct vg_coord {
    pthread_mutex_t mu;
    pthread_cond_t cv;         /* stop requested or a thread finished */
    atomic_bool stop;
    bool joined;
    bool has_err;
    vg_status err;
    vg_code *clean;
    int nclean;
    coord_thread *threads;     /* registered, not yet joined */
    int refs;                  /* 1 for the owner + 1 per running thread */
};

/* ------------------------------------------------------------------------ */
/* time helpers (CLOCK_MONOTONIC condvar waits) */

static void abs_deadline(struct timespec *ts, int64_t deadline_ns) {
    ts->tv_sec = (time_t)(deadline_ns / 1000000000LL);
    ts->tv_nsec = (long)(deadline_ns % 1000000000LL);
}

static int64_t secs_to_ns(double secs) {
    if (secs > 1e9) secs = 1e9; /* ~31 years: effectively forever, no overflow */
    return (int64_t)(secs * 1e9);
}

/* ------------------------------------------------------------------------ */
/* create / free */

vg_coord *vg_coord_new(const vg_code *clean_stop_codes, int n) {
    vg_coord *c = vg_calloc(1, sizeof *c);
    if (!c) return NULL;
    static const vg_code def_clean[] = {VG_OUT_OF_RANGE};
    const vg_code *src = clean_stop_codes ? clean_stop_codes : def_clean;
    int cnt = clean_stop_codes ? (n > 0 ? n : 0) : 1;
    if (cnt > 0) {
        c->clean = vg_malloc(sizeof(vg_code) * (size_t)cnt);
        if (!c->clean) {
            vg_free(c);
            return NULL;
        }
        memcpy(c->clean, src, sizeof(vg_code) * (size_t)cnt);
    }
    c->nclean = cnt;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&c->mu, NULL);
    atomic_init(&c->stop, false);
    c->refs = 1;
    return c;
}

static void coord_destroy(vg_coord *c) {
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    vg_free(c->clean);
    vg_free(c);
}

static void thread_free(coord_thread *t) {
    vg_free(t->name);
    vg_free(t);
}

/* Joins finished threads of `list` and detaches the others (they then free their
 * own record). Returns the names of the live ones in `names` (may be NULL). Called
 * with c->mu NOT held (pthread_join may wait for a thread's last few lines, which
 * take the lock). */
static void release_threads(vg_coord *c, coord_thread *list, bool *done_flags, char *names, size_t len) {
    if (names && len) names[0] = 0;
    int i = 0;
    for (coord_thread *t = list, *next; t; t = next, i++) {
        next = t->next;
        if (done_flags[i]) {
            pthread_join(t->tid, NULL);
            thread_free(t);
        } else {
            /* The thread may have finished since the snapshot: decide under the lock. */
            pthread_mutex_lock(&c->mu);
            bool finished = t->done;
            pthread_t tid = t->tid;
            if (!finished) {
                if (names) {
                    size_t l = strlen(names);
                    snprintf(names + l, len - l, "%s%s", l ? " " : "", t->name);
                }
                t->detached = true; /* from here on the thread owns (and frees) its record */
            }
            pthread_mutex_unlock(&c->mu);
            if (finished) {
                pthread_join(tid, NULL);
                thread_free(t);
            } else {
                pthread_detach(tid);
            }
        }
    }
}

void vg_coord_free(vg_coord *c) {
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    coord_thread *list = c->threads;
    c->threads = NULL;
    int n = 0;
    for (coord_thread *t = list; t; t = t->next) n++;
    bool *done = n ? vg_calloc((size_t)n, sizeof(bool)) : NULL;
    int i = 0;
    for (coord_thread *t = list; t; t = t->next, i++)
        if (done) done[i] = t->done;
    pthread_mutex_unlock(&c->mu);
    if (n && !done) {
        /* No memory for the snapshot: treat every thread as live (detach all). */
        bool none = false;
        for (coord_thread *t = list, *next; t; t = next) {
            next = t->next;
            t->next = NULL;
            release_threads(c, t, &none, NULL, 0);
        }
    } else {
        release_threads(c, list, done, NULL, 0);
    }
    vg_free(done);
    pthread_mutex_lock(&c->mu);
    int left = --c->refs;
    pthread_mutex_unlock(&c->mu);
    if (left == 0) coord_destroy(c);
}

/* ------------------------------------------------------------------------ */
/* stop requests */

static bool is_clean(const vg_coord *c, vg_code code) {
    for (int i = 0; i < c->nclean; i++)
        if (c->clean[i] == code) return true;
    return false;
}

vg_code vg_coord_request_stop(vg_coord *c, const vg_status *err) {
    if (!c) return VG_INVALID_ARGUMENT;
    bool error = err && err->code != VG_OK && !is_clean(c, err->code);
    pthread_mutex_lock(&c->mu);
    if (c->joined && error) {
        /* TF re-raises it: nobody would see it otherwise. Not stored. */
        pthread_mutex_unlock(&c->mu);
        return err->code;
    }
    if (!atomic_load(&c->stop)) {
        if (error && !c->has_err) {
            c->err = *err;
            c->has_err = true;
        }
        atomic_store(&c->stop, true);
        pthread_cond_broadcast(&c->cv);
    }
    pthread_mutex_unlock(&c->mu);
    return VG_OK;
}

bool vg_coord_should_stop(vg_coord *c) { return !c || atomic_load_explicit(&c->stop, memory_order_acquire); }

bool vg_coord_wait_for_stop(vg_coord *c, double timeout_secs) {
    if (!c) return true;
    pthread_mutex_lock(&c->mu);
    if (timeout_secs < 0) {
        while (!atomic_load(&c->stop)) pthread_cond_wait(&c->cv, &c->mu);
    } else {
        struct timespec ts;
        abs_deadline(&ts, vg__train_now_ns() + secs_to_ns(timeout_secs));
        while (!atomic_load(&c->stop))
            if (pthread_cond_timedwait(&c->cv, &c->mu, &ts) == ETIMEDOUT) break;
    }
    bool stopped = atomic_load(&c->stop);
    pthread_mutex_unlock(&c->mu);
    return stopped;
}

void vg_coord_clear_stop(vg_coord *c) {
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    c->joined = false;
    c->has_err = false;
    vg_status_clear(&c->err);
    atomic_store(&c->stop, false);
    pthread_mutex_unlock(&c->mu);
}

vg_code vg_coord_raise_requested_exception(vg_coord *c, vg_status *st) {
    if (!c) return vg_status_set(st, VG_INVALID_ARGUMENT, "coordinator is NULL");
    pthread_mutex_lock(&c->mu);
    vg_status e = c->err;
    bool has = c->has_err;
    pthread_mutex_unlock(&c->mu);
    if (!has) {
        vg_status_clear(st);
        return VG_OK;
    }
    vg_status_copy(st, &e);
    return e.code;
}

/* ------------------------------------------------------------------------ */
/* threads */

/* LooperThread.run: calls at fixed interval boundaries (first call at once) until a
 * stop; interval <= 0 calls back-to-back. An error requests a stop with it. */
static void run_looper(coord_thread *t) {
    vg_coord *c = t->c;
    int64_t next = vg__train_now_ns();
    int64_t step = t->interval > 0 ? secs_to_ns(t->interval) : 0;
    for (;;) {
        if (step > 0) {
            double wait = (double)(next - vg__train_now_ns()) / 1e9;
            if (vg_coord_wait_for_stop(c, wait > 0 ? wait : 0)) break;
            next += step;
        } else if (vg_coord_should_stop(c)) {
            break;
        }
        vg_status st;
        vg_status_clear(&st);
        vg_code rc = t->looper(t->payload, &st);
        if (rc != VG_OK) {
            if (st.code == VG_OK) vg_status_set(&st, rc, "looper %s failed", t->name);
            vg_coord_request_stop(c, &st);
            break;
        }
    }
}

static void *thread_main(void *arg) {
    coord_thread *t = arg;
    vg_coord *c = t->c;
    if (t->fn) t->fn(c, t->payload);
    else run_looper(t);
    pthread_mutex_lock(&c->mu);
    t->done = true;
    bool own = t->detached;
    int left = --c->refs;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    if (own) thread_free(t);
    if (left == 0) coord_destroy(c);
    return NULL;
}

static vg_code start(vg_coord *c, coord_thread *t, vg_status *st) {
    pthread_mutex_lock(&c->mu);
    c->refs++;
    int err = pthread_create(&t->tid, NULL, thread_main, t);
    if (err) {
        c->refs--;
        pthread_mutex_unlock(&c->mu);
        thread_free(t);
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "cannot start thread: %s", strerror(err));
    }
    /* Registered under the same lock that thread_main takes at its end, so join sees
     * the record before the thread can be marked done. */
    t->next = c->threads;
    c->threads = t;
    pthread_mutex_unlock(&c->mu);
    return VG_OK;
}

static coord_thread *new_thread(vg_coord *c, const char *name, void *payload, vg_status *st) {
    coord_thread *t = vg_calloc(1, sizeof *t);
    char *nm = vg__train_strdup(name ? name : "thread");
    if (!t || !nm) {
        vg_free(t);
        vg_free(nm);
        VG_OOM(st, "coordinator thread");
        return NULL;
    }
    t->c = c;
    t->name = nm;
    t->payload = payload;
    return t;
}

vg_code vg_coord_start_thread(vg_coord *c, const char *name, vg_coord_thread_fn fn, void *payload, vg_status *st) {
    if (!c || !fn) return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_coord_start_thread: NULL coordinator or fn");
    coord_thread *t = new_thread(c, name, payload, st);
    if (!t) return VG_RESOURCE_EXHAUSTED;
    t->fn = fn;
    return start(c, t, st);
}

vg_code vg_coord_start_looper(vg_coord *c, const char *name, double interval_secs, vg_coord_looper_fn fn,
                              void *payload, vg_status *st) {
    if (!c || !fn) return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_coord_start_looper: NULL coordinator or fn");
    coord_thread *t = new_thread(c, name, payload, st);
    if (!t) return VG_RESOURCE_EXHAUSTED;
    t->looper = fn;
    t->interval = interval_secs;
    return start(c, t, st);
}

/* ------------------------------------------------------------------------ */
/* join */

static bool all_done(const coord_thread *list) {
    for (const coord_thread *t = list; t; t = t->next)
        if (!t->done) return false;
    return true;
}

vg_code vg_coord_join(vg_coord *c, double stop_grace_period_secs, bool ignore_live_threads, vg_status *st) {
    if (!c) return vg_status_set(st, VG_INVALID_ARGUMENT, "coordinator is NULL");
    pthread_mutex_lock(&c->mu);
    /* Snapshot: threads registered after this point are not joined. */
    coord_thread *list = c->threads;
    c->threads = NULL;
    /* Wait for every thread to end or for a stop request. */
    while (!all_done(list) && !atomic_load(&c->stop)) pthread_cond_wait(&c->cv, &c->mu);
    /* Then give the live ones the grace period. */
    if (stop_grace_period_secs >= 0 && !all_done(list)) {
        struct timespec ts;
        abs_deadline(&ts, vg__train_now_ns() + secs_to_ns(stop_grace_period_secs));
        while (!all_done(list))
            if (pthread_cond_timedwait(&c->cv, &c->mu, &ts) == ETIMEDOUT) break;
    }
    int n = 0;
    for (coord_thread *t = list; t; t = t->next) n++;
    bool done_local[64], *done = n <= 64 ? done_local : vg_calloc((size_t)n, sizeof(bool));
    bool none = false;
    int i = 0;
    for (coord_thread *t = list; t && done; t = t->next, i++) done[i] = t->done;
    c->joined = true;
    vg_status err = c->err;
    bool has_err = c->has_err;
    pthread_mutex_unlock(&c->mu);

    char names[VG_STATUS_MSG_MAX];
    if (done) {
        release_threads(c, list, done, names, sizeof names);
    } else {
        /* No memory for the snapshot: join nothing, detach everything. */
        names[0] = 0;
        for (coord_thread *t = list, *next; t; t = next) {
            next = t->next;
            t->next = NULL;
            char one[256];
            release_threads(c, t, &none, one, sizeof one);
            size_t l = strlen(names);
            if (one[0]) snprintf(names + l, sizeof names - l, "%s%s", l ? " " : "", one);
        }
    }
    if (done != done_local) vg_free(done);

    if (has_err) {
        vg_status_copy(st, &err);
        return err.code;
    }
    if (names[0]) {
        if (ignore_live_threads) {
            vg_logf(VG_LOG_INFO, "Coordinator stopped with threads still running: %s", names);
        } else {
            return vg_status_set(st, VG_FAILED_PRECONDITION, "Coordinator stopped with threads still running: %s",
                                 names);
        }
    }
    vg_status_clear(st);
    return VG_OK;
}
