/* exec.h - session and executor internals: variable slots, execution plans, run
 * states and the kernel context's layout. The kernel-facing functions over these
 * (vg__kctx_*, vg__var_*, session resources) are the kernel layer's: kernels/kernel.c. */
#ifndef VG_EXEC_H
#define VG_EXEC_H

#include "core/strmap.h"
#include "core/threadpool.h"
#include "core/tensor_internal.h"
#include "graph/graph_impl.h"
#include "vigil/session.h"
#include <pthread.h>
#include <stdatomic.h>

typedef struct vg__var vg__var;

struct vg__var {
    pthread_mutex_t mu;
    vg_tensor *value;
    const vg_op *op;
};

/* One node of a plan. */
typedef struct vg__node {
    vg_op *op;
    const vg__op_def *def;
    int ninputs;
    int *in_slot;        /* value slot of each input; -1 for ref inputs */
    vg__var **in_var;    /* var slot of each ref input (NULL otherwise) */
    int out_base;        /* slot of output 0 */
    int noutputs;
    int *succ;           /* successor nodes (data, control and ordering edges) */
    int nsucc;
    int npred;           /* initial pending count */
    bool is_var_read;    /* VariableV2 read by the executor itself */
    vg__var *var;        /* for is_var_read */
    bool *out_fed;       /* per output: value comes from a feed (NULL if none) */
    vg_tensor *const_value; /* Const: its value (borrowed from the graph) */
    bool feeds_collective;  /* a successor is a collective op (run it early) */
    _Atomic bool splits;    /* its kernel split its last run over the intra-op pool */
} vg__node;

typedef struct vg__run_state vg__run_state;
typedef struct vg__kctx vg__kctx;
typedef struct vg__cf_plan vg__cf_plan; /* control-flow plans only: cflow.c */

typedef struct vg__plan {
    /* key */
    int nfeeds, nfetches, ntargets;
    int *key;            /* (op id, index) pairs for feeds, fetches; op ids for targets */
    int nkey;
    uint64_t hash;
    /* body */
    int nnodes;
    vg__node *nodes;
    int *order;          /* topological order */
    int nslots;
    int *slot_uses;      /* consumers (+ fetches) per slot */
    int *feed_slot;      /* slot of each feed */
    int *fetch_slot;     /* slot of each fetch */
    bool parallel;       /* worth running with the inter-op pool */
    _Atomic int64_t *cost_ns; /* parallel plans: per node, running average of its time (0: not measured) */
    bool collectives;    /* has VG__OP_COLLECTIVE nodes: ready nodes are taken by priority */
    vg__cf_plan *cf;     /* non-NULL: the plan has control flow (frames); run by cflow.c */
    /* run-state cache */
    pthread_mutex_t mu;
    vg__run_state *free_states;
    _Atomic(vg__run_state *) cached; /* one state kept outside the lock (the common case) */
} vg__plan;

/* A per-session resource (see vg__session_resource in kernels/kernel.h). */
typedef struct vg__resource {
    void *ptr;
    void (*cancel)(void *r);  /* called by vg_session_close (optional) */
    void (*destroy)(void *r); /* called by vg_session_free (optional) */
} vg__resource;

struct vg_session {
    vg_graph *g;
    vg_session_options opts;
    vg__pool *inter;     /* == intra when both are > 1 (one set of threads, see session.c) */
    vg__pool *intra;
    int intra_threads;
    int inter_helpers;   /* inter-op threads - 1: pool tasks one run may have at once */
    int nops;            /* graph size at creation (ops added later are unknown) */
    vg__var **vars;      /* by op id, for VariableV2 ops */
    pthread_mutex_t mu;  /* plans, kernel states, resources, inflight */
    pthread_cond_t idle;
    vg__plan **plans;
    int nplans, plans_cap;
    void **kstate;
    void (**kstate_destroy)(void *);
    vg__strmap resources;
    atomic_int inflight; /* runs in progress (incremented under mu) */
    atomic_bool closing;
    bool closed;
};

struct vg_run_metadata {
    vg_node_stats *nodes;
    int n, cap;
    int partition_graphs;
    pthread_mutex_t mu;
};

/* A per-run resource (TF's step container: stacks, TensorArrays), destroyed when the
 * run ends. */
typedef struct vg__step_res {
    struct vg__step_res *next;
    void *ptr;
    void (*destroy)(void *);
} vg__step_res;

/* The state of one run of a plan (recycled between runs). */
struct vg__run_state {
    vg__run_state *next_free; /* must stay first (free list link) */
    vg_tensor **vals;
    atomic_int *uses;
    atomic_int *pending;
    int *ready;
    int nready;
    int ndone;
    atomic_uint progress;      /* bumped (under mu) when nodes become ready or the run ends */
    int helpers;               /* pool tasks started or queued for this run and still looking for nodes */
    bool caller_blocking;      /* (under mu) the caller is running a blocking node: helpers
                                * then take blocking nodes too (take_ready) */
    int split_running;         /* (under mu) nodes running whose kernels split over every
                                * thread (split_waits) */
    int refs;                  /* the caller + queued/running helper tasks; the state is
                                * recycled by whoever drops the last reference, so a run
                                * never waits for a helper task stuck behind a blocked
                                * pool thread */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_bool failed;
    vg_status err;
    vg_session *s;
    vg__plan *p;
    const vg_run_options *ro;
    vg_run_metadata *md;
    int64_t deadline;
    bool trace;
    vg__step_res *step_res;    /* per-run resources (under mu), freed at the end of the run */
};

/* What a kernel call gets (see kernels/kernel.h). */
struct vg__kctx {
    vg__run_state *rs;
    vg__node *n;
    vg_tensor **outs;
    vg_status *st;
    vg_tensor **vals;    /* the input slots (the run's, or a control-flow iteration's) */
};

VG_HIDDEN vg_code vg__plan_build(vg_session *s, const vg_output *feeds, int nfeeds, const vg_output *fetches,
                                 int nfetches, vg_op *const *targets, int ntargets, vg__plan **out, vg_status *st);
/* Is node `to` reachable from `from` along succ edges? mark: nnodes ints, stamp a value
 * not in it yet (a fresh ++stamp per call); stack: nnodes ints of scratch. */
VG_HIDDEN bool vg__plan_reaches(const vg__plan *p, int from, int to, int *mark, int stamp, int *stack);
VG_HIDDEN void vg__plan_free(vg__plan *p);
VG_HIDDEN vg_code vg__plan_run(vg_session *s, vg__plan *p, const vg_run_options *ro, vg_tensor *const *feed_values,
                               vg_tensor **out, vg_run_metadata *md, vg_status *st);
/* The session's variable slot of VariableV2 op `op`; NULL for an op added after the
 * session was created. */
static inline vg__var *vg__session_var(vg_session *s, const vg_op *op) {
    return (op->id < s->nops) ? s->vars[op->id] : NULL;
}
/* Control flow (cflow.c): true if op type `type` is one of the frame/deadness ops
 * (Switch, Merge, Enter, Exit, NextIteration, LoopCond, ControlTrigger). */
VG_HIDDEN bool vg__cf_is_cflow_type(const char *type);
/* Builds p->cf for a plan whose nodes include control-flow ops. op_node: plan node of
 * each op id (-1 = not run); feed_of / out_off as in the plan builder. */
VG_HIDDEN vg_code vg__cf_build(vg_session *s, vg__plan *p, const int *op_node, const int *feed_of,
                               const int *out_off, const vg_output *feeds, const vg_output *fetches,
                               vg_status *st);
VG_HIDDEN void vg__cf_free(vg__cf_plan *cf);
/* Runs a control-flow plan (rs prepared by vg__plan_run): on the caller's thread, helped by
 * the inter-op pool when it has threads. */
VG_HIDDEN vg_code vg__cf_run(vg__run_state *rs, vg_tensor *const *feed_values, vg_tensor **out, vg_status *st);
/* Destroys the run's step resources (the end of a run). */
VG_HIDDEN void vg__step_res_free(vg__run_state *rs);
/* Plan-time fusion (fuse.c): rewrites Conv2D -> BiasAdd [-> Relu] and MaxPoolGrad ->
 * ReluGrad node chains of a plan without control flow into one fused kernel (before
 * the topological sort; succ_cap as in the plan builder). Fails only with
 * RESOURCE_EXHAUSTED. */
VG_HIDDEN vg_code vg__plan_fuse(vg__plan *p, int *succ_cap, vg_status *st);
/* Turns that fusion on (the default) or off for plans built from now on, for tests and
 * benchmarks; returns the previous setting. Process-wide. */
VG_HIDDEN bool vg__plan_set_fusion(bool on);

/* Hash of a plan key (ints). */
VG_HIDDEN uint64_t vg__plan_key_hash(const int *key, int n);

#endif
