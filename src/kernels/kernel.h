/*
 * kernel.h - the kernel layer's run-time interface: what a CPU kernel sees while it
 * runs (its context: inputs, outputs, status, intra-op threads, per-op state), the
 * variable slots behind ref inputs, and per-session resources (queues). Every op
 * family file includes this header; it brings in graph/registry.h (op definitions,
 * shape-function helpers) and core/tensor_internal.h.
 *
 * Implemented in kernel.c on top of the executor's data (exec/exec.h); the executor
 * itself only fills a vg__kctx and calls the def's kernel pointer, so nothing below
 * this layer depends on it.
 */
#ifndef VG_KERNEL_H
#define VG_KERNEL_H

#include "core/tensor_internal.h"
#include "graph/registry.h"
#include "vigil/session.h"
#include <pthread.h>

/* Defines kernel NAME as NAME_unlocked(ctx) run under the pthread mutex MU: for the
 * families whose session objects carry no lock of their own (TensorArrays, stacks)
 * and whose ops the executor may run at once. */
#define VG__KERNEL_UNDER_LOCK(name, mu)                                                                           \
    static vg_code name(vg__kctx *ctx) {                                                                          \
        pthread_mutex_lock(&(mu));                                                                                \
        vg_code rc_ = name##_unlocked(ctx);                                                                       \
        pthread_mutex_unlock(&(mu));                                                                              \
        return rc_;                                                                                               \
    }

typedef struct vg__var vg__var;

/* ---- run-time kernel context -------------------------------------------- */
VG_HIDDEN const vg_op *vg__kctx_op(const vg__kctx *ctx);
VG_HIDDEN int vg__kctx_num_inputs(const vg__kctx *ctx);
/* The program the planner gave a fused element-wise node (exec/ewfuse.h; borrowed,
 * lives with the plan), NULL for any other node. */
VG_HIDDEN const struct vg__ew_prog *vg__kctx_fused_prog(const vg__kctx *ctx);
/* True when the mixed-precision rewrite painted the node (exec/amp.c): its float32
 * inputs hold bfloat16 values and it may compute in bfloat16 (MatMul does). */
VG_HIDDEN bool vg__kctx_amp(const vg__kctx *ctx);
/* Input i's value, borrowed for the kernel call. For a ref input this is the
 * variable's current value (NULL if uninitialized). */
VG_HIDDEN vg_tensor *vg__kctx_input(const vg__kctx *ctx, int i);
/* Allocates output i (64-byte aligned, uninitialised data) and sets it; *out is
 * borrowed. Fails with RESOURCE_EXHAUSTED (status set). */
VG_HIDDEN vg_code vg__kctx_alloc_output(vg__kctx *ctx, int i, vg_dtype dt, const int64_t *dims,
                                         int ndims, vg_tensor **out);
/* Sets output i to t, taking over one reference (e.g. Identity: vg_tensor_ref(in)). */
VG_HIDDEN void vg__kctx_set_output(vg__kctx *ctx, int i, vg_tensor *t);
/* The variable slot behind ref input i (NULL if input i is not a ref input). */
VG_HIDDEN vg__var *vg__kctx_var(const vg__kctx *ctx, int i);
VG_HIDDEN vg_status *vg__kctx_status(vg__kctx *ctx);
VG_HIDDEN vg_session *vg__kctx_session(const vg__kctx *ctx);
VG_HIDDEN const vg_run_options *vg__kctx_run_options(const vg__kctx *ctx);
/* Absolute deadline (vg__now_ns clock) from run_options.timeout_in_ms, 0 = none. */
VG_HIDDEN int64_t vg__kctx_deadline_ns(const vg__kctx *ctx);
/* Number of intra-op threads available to this kernel (>= 1). */
VG_HIDDEN int vg__kctx_num_threads(const vg__kctx *ctx);
/* Runs fn(arg, begin, end) over [0, n) split into chunks on the intra-op pool; the
 * caller's thread takes part; returns when all are done. cost_per_unit is a rough
 * count of flops per unit used to decide whether splitting pays (< ~10k total units
 * of work run inline). */
typedef void (*vg__range_fn)(void *arg, int64_t begin, int64_t end);
VG_HIDDEN void vg__kctx_parallel_for(vg__kctx *ctx, int64_t n, int64_t cost_per_unit,
                                     vg__range_fn fn, void *arg);
/* Runs fn(arg, begin, end, slot) over [0, n) cut into nchunks pieces that up to nslots
 * threads (the caller's included) claim as they go: a thread on a core that runs slow
 * this minute takes fewer pieces instead of holding the others up at the end. Each
 * thread keeps one slot in [0, nslots) for all its pieces (index per-thread scratch
 * with it); slot 0 always runs at least one piece (n > 0), other slots may run none.
 * nslots <= 1 or no pool: fn(arg, 0, n, 0) on the caller. */
typedef void (*vg__slot_range_fn)(void *arg, int64_t begin, int64_t end, int slot);
VG_HIDDEN void vg__kctx_parallel_for_slots(vg__kctx *ctx, int64_t n, int nslots, int64_t nchunks,
                                           vg__slot_range_fn fn, void *arg);
/* Per-(session, op) kernel state, created once on first use with create (thread-safe;
 * later calls return the same pointer); destroy is called when the session is freed.
 * Used by random ops (their stream position) and resource ops. */
VG_HIDDEN vg_code vg__kctx_state(vg__kctx *ctx, void *(*create)(const vg_op *op, vg_status *st),
                                  void (*destroy)(void *state), void **out);

/* A per-run resource (TF's step container): destroy(ptr) is called when the run ends
 * (also on failure). RESOURCE_EXHAUSTED (destroy(ptr) called at once). */
VG_HIDDEN vg_code vg__kctx_step_resource(vg__kctx *ctx, void *ptr, void (*destroy)(void *));

/* ---- variables ---------------------------------------------------------- */
/* A session's variable slot. Locking: vg__var_lock around any access to value. */
VG_HIDDEN void vg__var_lock(vg__var *v);
VG_HIDDEN void vg__var_unlock(vg__var *v);
/* Current value (borrowed; NULL = uninitialized). Call with the lock held. */
VG_HIDDEN vg_tensor *vg__var_value(vg__var *v);
/* Replaces the value (takes over one reference of t; the old one is released). Lock held. */
VG_HIDDEN void vg__var_set(vg__var *v, vg_tensor *t);
/* The value, made safe to modify in place (copy-on-write if anyone else holds a
 * reference). Lock held. FAILED_PRECONDITION "Attempting to use uninitialized value
 * <name>" when uninitialized; RESOURCE_EXHAUSTED. */
VG_HIDDEN vg_tensor *vg__var_mutable(vg__var *v, vg_status *st);
VG_HIDDEN const char *vg__var_name(const vg__var *v);

/* Session resources (queues and the like), created once per session by name.
 * cancel(r) is called when the session closes (wake blocked waiters with CANCELLED);
 * destroy(r) when the session is freed. */
typedef struct vg__resource_ops {
    void (*cancel)(void *r);   /* (optional) */
    void (*destroy)(void *r);
} vg__resource_ops;
VG_HIDDEN vg_code vg__session_resource(vg_session *s, const char *name, const vg__resource_ops *ops,
                                        void *(*create)(void *arg, vg_status *st), void *arg,
                                        void **out, vg_status *st);
/* True once vg_session_close started. */
VG_HIDDEN bool vg__session_closing(const vg_session *s);

#endif
