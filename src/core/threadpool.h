/* threadpool.h - a fixed pool of worker threads and a parallel-for in which the
 * calling thread takes part (so it never waits on a pool that is busy elsewhere). */
#ifndef VG_THREADPOOL_H
#define VG_THREADPOOL_H
#include "core.h"

typedef struct vg__pool vg__pool;
typedef void (*vg__task_fn)(void *arg);
typedef void (*vg__chunk_fn)(void *arg, int64_t begin, int64_t end);

/* nthreads workers (0 allowed: everything runs on the caller). NULL on failure. */
VG_HIDDEN vg__pool *vg__pool_new(int nthreads);
/* Waits for queued tasks to finish, joins the workers. */
VG_HIDDEN void vg__pool_free(vg__pool *p);
VG_HIDDEN int vg__pool_size(const vg__pool *p);
/* Queues fn(arg). Returns false if it could not be queued (caller runs it itself). */
VG_HIDDEN bool vg__pool_submit(vg__pool *p, vg__task_fn fn, void *arg);
/* Index of the pool worker running the current thread (1..n), 0 elsewhere. */
VG_HIDDEN int vg__pool_thread_id(void);
/* Runs fn over [0,n) in up to max_parts chunks on the pool plus the caller. */
VG_HIDDEN void vg__pool_parallel_for(vg__pool *p, int64_t n, int max_parts, vg__chunk_fn fn, void *arg);
#endif
