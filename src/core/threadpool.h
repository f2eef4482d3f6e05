/* threadpool.h - a fixed pool of worker threads and a parallel-for in which the
 * calling thread takes part (so it never waits on a pool that is busy elsewhere). */
#ifndef VG_THREADPOOL_H
#define VG_THREADPOOL_H
#include "core.h"

typedef struct vg__pool vg__pool;
typedef void (*vg__task_fn)(void *arg);
typedef void (*vg__chunk_fn)(void *arg, int64_t begin, int64_t end);
/* A chunk function that also gets its thread's slot (see vg__pool_parallel_for_slots). */
typedef void (*vg__slot_chunk_fn)(void *arg, int64_t begin, int64_t end, int slot);

/* nthreads workers (0 allowed: everything runs on the caller). NULL on failure. */
VG_HIDDEN vg__pool *vg__pool_new(int nthreads);
/* Waits for queued tasks to finish, joins the workers. */
VG_HIDDEN void vg__pool_free(vg__pool *p);
VG_HIDDEN int vg__pool_size(const vg__pool *p);
/* Queues fn(arg). Returns false if it could not be queued (caller runs it itself). */
VG_HIDDEN bool vg__pool_submit(vg__pool *p, vg__task_fn fn, void *arg);
/* Index of the pool worker running the current thread (1..n), 0 elsewhere. */
VG_HIDDEN int vg__pool_thread_id(void);
/* Runs fn over [0,n) in up to max_parts chunks on the pool plus the caller. The
 * caller waits for chunks other threads took by spinning for up to the spin window,
 * then sleeping. */
VG_HIDDEN void vg__pool_parallel_for(vg__pool *p, int64_t n, int max_parts, vg__chunk_fn fn, void *arg);
/* The same in nchunks pieces (at least one per thread taking part, at most n) claimed as
 * the threads go, so a thread on a slower or preempted core takes fewer. */
VG_HIDDEN void vg__pool_parallel_for_n(vg__pool *p, int64_t n, int max_parts, int64_t nchunks, vg__chunk_fn fn,
                                       void *arg);
/* Runs fn over [0,n) cut into nchunks pieces that up to max_parts threads (the caller
 * and pool workers) claim as they go, so a thread on a slower or preempted core takes
 * fewer. Each taking part thread gets a distinct slot in [0, max_parts) for all the
 * pieces it runs (per-thread scratch, partial sums); slot 0 is the first to claim, so
 * it always runs at least one piece when n > 0. Slots above 0 may run none. */
VG_HIDDEN void vg__pool_parallel_for_slots(vg__pool *p, int64_t n, int max_parts, int64_t nchunks,
                                           vg__slot_chunk_fn fn, void *arg);
/* Runs one queued task on the calling thread; false if the queue was empty. NULL p:
 * false. */
VG_HIDDEN bool vg__pool_run_one(vg__pool *p);
/* Runs one queued share of some thread's parallel_for on the calling thread (a thread
 * that would otherwise wait for that work helps with it; other queued tasks, which may
 * run long, stay for the workers); false if there was none. NULL p: false. */
VG_HIDDEN bool vg__pool_help(vg__pool *p);
/* How long an idle thread spins before it sleeps now, in ns: while a run is in
 * progress VG_POOL_SPIN_ACTIVE_US (default VG_POOL_SPIN_US when that is set, else
 * 1 ms), otherwise VG_POOL_SPIN_US (default 50 us); 0 for a NULL pool. */
VG_HIDDEN int64_t vg__pool_spin_ns(const vg__pool *p);
/* A session run that may hand work to the pool starts / ends (counted; NULL p: no-op).
 * While any is in progress the pool's threads spin for the longer window. */
VG_HIDDEN void vg__pool_run_begin(vg__pool *p);
VG_HIDDEN void vg__pool_run_end(vg__pool *p);
/* Monotonic clock in ns, as the pool's spin windows measure it. */
VG_HIDDEN int64_t vg__pool_now_ns(void);

/* One spin-wait step: a few pause instructions (no yield: a yield hands the core to
 * any runnable thread for a whole time slice, background work included). */
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define VG__CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define VG__CPU_RELAX() __asm__ __volatile__("yield")
#else
#define VG__CPU_RELAX() ((void)0)
#endif
static inline void vg__spin_pause(void) {
    for (int k = 0; k < 8; k++) VG__CPU_RELAX();
}
#endif
