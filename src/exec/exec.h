/* exec.h - session and executor internals: variable slots, execution plans, run
 * states and the kernel context's layout. The kernel-facing functions over these
 * (vg__kctx_*, vg__var_*, session resources) are the kernel layer's: kernels/kernel.c.
 *
 * One executor runs every plan (executor.c): a plain graph is the root frame of the same
 * scheduler that runs TF1's while-loop frames. Plans are built by plan.c. */
#ifndef VG_EXEC_H
#define VG_EXEC_H

#include "core/strmap.h"
#include "core/threadpool.h"
#include "core/tensor_internal.h"
#include "graph/graph_impl.h"
#include "vigil/session.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

typedef struct vg__var vg__var;

/* A session's slot for one VariableV2 op. The value is copy-on-write: readers take a
 * reference under mu; a writer that finds the buffer shared copies it first
 * (vg__var_mutable), so a value once read never changes under its reader. */
struct vg__var {
    pthread_mutex_t mu;
    vg_tensor *value;
    const vg_op *op;
};

/* A variable reference travelling along an edge (TF's ref tensor): the tagged address
 * of the variable's slot. A VariableV2 node outputs one; Identity, RefIdentity and the
 * control-flow ops (Enter, Exit, Switch, Merge, NextIteration) pass it on; any other
 * consumer reads the variable when it runs (vg__exec deref), and a fetch reads it when
 * the fetched node completes. Kernels never see a reference. */
static inline bool vg__val_is_ref(const vg_tensor *t) { return ((uintptr_t)t & 1u) != 0; }
static inline vg_tensor *vg__val_ref_of(vg__var *v) { return (vg_tensor *)((uintptr_t)v | 1u); }
static inline vg__var *vg__val_var(const vg_tensor *t) { return (vg__var *)((uintptr_t)t & ~(uintptr_t)1u); }
static inline void vg__val_free(vg_tensor *t) {
    if (!vg__val_is_ref(t)) vg_tensor_free(t);
}
static inline vg_tensor *vg__val_dup(vg_tensor *t) { return vg__val_is_ref(t) ? t : vg_tensor_ref(t); }

/* A plan edge: from one output (src_out; -1 = a control edge) of its source node to
 * input dst_in (-1 = control) of node dst. */
typedef struct vg__edge {
    int dst;
    int src_out;
    int dst_in;
    bool last; /* the source output's last data edge: its reference can be moved */
} vg__edge;

/* Executor-run node kinds (the rest run kernels). */
enum {
    VG__K_KERNEL = 0,
    VG__K_SWITCH,
    VG__K_MERGE,
    VG__K_ENTER,
    VG__K_EXIT,
    VG__K_NEXT,
    VG__K_LOOPCOND,
    VG__K_TRIGGER,
    VG__K_CONST,    /* Const: its value (borrowed from the graph) */
    VG__K_VARIABLE, /* VariableV2: a reference to its slot */
    VG__K_IDENTITY  /* Identity / RefIdentity: passes a reference on, else runs its kernel */
};

/* One node of a plan. */
typedef struct vg__node {
    vg_op *op;
    const vg__op_def *def;
    int kind;            /* VG__K_* */
    int ninputs;
    /* Input i's slot. While the plan is built (plan.c, fuse.c): the plan-wide slot of
     * the output feeding it (-1: a ref input, or none). In a built plan: its index in
     * the per-iteration input array of the node's frame (in_base + i), -1 for ref inputs. */
    int *in_slot;
    vg__var **in_var;    /* var slot of each ref input (NULL otherwise) */
    int out_base;        /* plan-wide slot of output 0 (plan building only) */
    int noutputs;
    int *succ;           /* plan building: successors (data, control, ordering edges) */
    int nsucc;
    bool *out_fed;       /* per output: value comes from a feed (NULL if none) */
    vg_tensor *const_value; /* Const: its value (borrowed from the graph) */
    vg__var *var;        /* VariableV2: its slot */
    struct vg__ew_prog *ew_prog; /* a fused element-wise cluster's program (fuse_ew.c), owned */
    /* built plan */
    vg__edge *out;       /* outgoing edges */
    int nout;
    int frame;           /* static frame the node runs in (0 = root) */
    int child;           /* Enter: static frame of its outputs */
    bool is_constant;    /* Enter: a loop invariant, delivered to every iteration */
    int parallel;        /* Enter: parallel_iterations */
    int lidx;            /* index among the nodes of its frame */
    int in_base;         /* first input's index in its frame's per-iteration input array */
    int ndata;           /* data inputs with an edge */
    int nctrl;           /* control inputs with an edge */
    int *fetch_of;       /* per output: first fetch index fed by it, -1 none (NULL: none) */
    bool *out_needed;    /* per output: an edge or a fetch reads it (NULL: none does) */
    bool need_index;     /* Merge: output 1 (value_index) is used */
    bool may_deref;      /* an input may carry a variable reference to read first */
    bool feeds_collective; /* a successor is a collective op (run it early) */
    bool blocking;       /* VG__OP_BLOCKING */
    bool collective;     /* VG__OP_COLLECTIVE */
    _Atomic bool splits; /* its kernel split its last run over the intra-op pool */
    _Atomic int64_t cost_ns; /* running average of its kernel's time (0: not measured) */
    bool amp;            /* painted by the mixed-precision rewrite (amp.c): computes in bfloat16 */
    bool *amp_round;     /* amp: per input, round it to bfloat16 first (its producer is not painted) */
} vg__node;

/* A static frame: the root (0) or a while loop's body, named by its Enters. */
typedef struct vg__sframe {
    char *name;       /* frame_name ("" for the root) */
    int parent;
    int nnodes;       /* nodes running in the frame */
    int ninputs;      /* their inputs */
    int nenters;      /* Enter nodes into it */
    int parallel;     /* parallel_iterations: the least of its Enters' */
    int *nodes;       /* plan node of each local index */
    int *pending0;    /* per local node: edges to wait for in a new iteration */
} vg__sframe;

typedef struct vg__run_state vg__run_state;
typedef struct vg__kctx vg__kctx;

typedef struct vg__plan {
    /* key */
    int nfeeds, nfetches, ntargets;
    int *key;            /* (op id, index) pairs for feeds, fetches; op ids for targets */
    int nkey;
    uint64_t hash;
    /* body */
    int nnodes;
    vg__node *nodes;
    int nslots;          /* plan building: output slots */
    int *slot_uses;      /* plan building: consumers (+ fetches) per slot */
    int *fetch_slot;     /* plan building: slot of each fetch */
    vg__sframe *frames;
    int nframes, frames_cap;
    vg__edge **feed_out; /* per feed: edges from the fed value */
    int *nfeed_out;
    int *roots;          /* nodes with no input edge (root frame) */
    int nroots;
    int *fetch_feed;     /* per fetch: feed index if the fetched tensor is fed, else -1 */
    int *fetch_node;     /* per fetch: plan node whose output it is (-1: fed) */
    int *fetch_next;     /* per fetch: the next fetch of the same output, -1 none */
    bool *fetch_copy;    /* per fetch: copy when taken (a Const's or a variable's value, which the session keeps) */
    bool parallel;       /* worth running with the inter-op pool */
    bool collectives;    /* has collective nodes: ready nodes are taken by priority */
    bool loops;          /* has frames besides the root */
    /* A parallel plan's first runs alternate between the inter-op threads and the caller
     * alone, and keep the faster (executor.c, ab_pick): a plan of many tiny nodes (the
     * DNC's ~15k nodes of ~0.3 us) ran 1.5-2x slower with inter-op threads handing its
     * nodes around than on one thread. seq: 0 undecided, 1 the caller alone, 2 parallel. */
    _Atomic int ab_runs;
    _Atomic int ab_seq;
    _Atomic int64_t ab_min_ns[2]; /* fastest run timed in each mode: [0] caller alone, [1] parallel */
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
    int nops;            /* ops known to the session (the graph grows: vg__session_extend) */
    int nops_cap;
    vg__var **vars;      /* by op id, for VariableV2 ops */
    pthread_mutex_t mu;  /* plans, kernel states, resources, inflight, growth */
    pthread_cond_t idle;
    vg__plan **plans;
    int nplans, plans_cap;
    void **kstate;
    void (**kstate_destroy)(void *);
    vg__strmap resources;
    atomic_int inflight; /* runs in progress (incremented under mu) */
    atomic_bool closing;
    bool closed;
    bool amp;            /* the mixed-precision rewrite paints plans built from now on (amp.c) */
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

typedef struct vg__frame vg__frame;
typedef struct vg__iter vg__iter;

/* A ready node: node `node` of iteration `iter` of frame instance f. */
typedef struct vg__task {
    int node;
    bool dead;
    vg__frame *f;
    int64_t iter;
} vg__task;

/* The state of one run of a plan (recycled between runs of the plan). With inter-op
 * helpers (mt) the caller and helper tasks on the pool share it: everything below is
 * guarded by mu except what a kernel running outside the lock reads (its own input
 * slots, which nothing else writes while it is scheduled). */
struct vg__run_state {
    vg__run_state *next_free; /* must stay first (free list link) */
    vg_session *s;
    vg__plan *p;
    const vg_run_options *ro;
    vg_run_metadata *md;
    int64_t deadline;
    bool trace;
    bool mt;                   /* helpers may take nodes: lock mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* ready tasks: a deque; sequential runs take the oldest (dataflow order), runs with
     * helpers the newest (see take_task) */
    vg__task *q;
    int qh, qt, qcap;
    int inflight;              /* nodes running outside the lock */
    int helpers;               /* pool tasks started or queued for this run and still looking for nodes */
    int refs;                  /* the caller + queued/running helper tasks; the state is
                                * recycled by whoever drops the last reference */
    bool caller_blocking;      /* the caller runs a blocking node: helpers take them too */
    bool caller_waits;         /* the caller sleeps on cv */
    int split_running;         /* nodes running whose kernels split over every thread */
    bool stop;                 /* an error: take no more nodes */
    bool oom;
    bool finished;             /* the caller has ended the run */
    unsigned tick;
    atomic_uint progress;      /* bumped (under mu) when tasks become ready or the run ends */
    vg_status err;             /* the first error */
    vg__frame *root;
    vg__iter *root_it;         /* the root frame's one iteration */
    vg_tensor **fetched;       /* per fetch */
    vg__iter **free_iters;     /* per static frame: recycled iteration states */
    vg__frame *free_frames;    /* recycled frame instances */
    vg__step_res *step_res;    /* per-run resources (under mu), freed at the end of the run */
};

/* What a kernel call gets (see kernels/kernel.h). */
struct vg__kctx {
    vg__run_state *rs;
    vg__node *n;
    vg_tensor **outs;
    vg_status *st;
    vg_tensor **vals;    /* the input slots of the node's iteration */
};

/* Plans (plan.c). */
VG_HIDDEN vg_code vg__plan_build(vg_session *s, const vg_output *feeds, int nfeeds, const vg_output *fetches,
                                 int nfetches, vg_op *const *targets, int ntargets, vg__plan **out, vg_status *st);
/* Is node `to` reachable from `from` along succ edges (plan building)? mark: nnodes
 * ints, stamp a value not in it yet (a fresh ++stamp per call); stack: nnodes ints. */
VG_HIDDEN bool vg__plan_reaches(const vg__plan *p, int from, int to, int *mark, int stamp, int *stack);
VG_HIDDEN void vg__plan_free(vg__plan *p);
/* Hash of a plan key (ints). */
VG_HIDDEN uint64_t vg__plan_key_hash(const int *key, int n);
/* Plan-time fusion (fuse.c): rewrites Conv2D -> BiasAdd [-> Relu] and MaxPoolGrad ->
 * ReluGrad node chains of a plan without control flow into one fused kernel (on the
 * plan-wide slots, before edges are made; succ_cap as in the plan builder). Fails only
 * with RESOURCE_EXHAUSTED. */
VG_HIDDEN vg_code vg__plan_fuse(vg__plan *p, int *succ_cap, vg_status *st);
/* Turns that fusion on (the default) or off for plans built from now on, for tests and
 * benchmarks; returns the previous setting. Process-wide. */
VG_HIDDEN bool vg__plan_set_fusion(bool on);
/* Element-wise cluster fusion (fuse_ew.c), run last by vg__plan_fuse; false on OOM.
 * Off when the environment has VG_EW_FUSION=0 (for A/B measurements). */
VG_HIDDEN bool vg__plan_fuse_elementwise(vg__plan *p, int *succ_cap);
/* Helpers of the fusion passes (fuse.c), plan building only: is any output of n fed;
 * add the edge from -> to unless there is one (false on OOM); per slot, the node producing
 * it (-1: fed or none; nslots + 1 ints, vg__free them); per node, whether a node of the
 * plan names its op as a control input (nnodes + 1 bools, vg__free them). NULL on OOM. */
VG_HIDDEN bool vg__plan_node_fed(const vg__node *n);
VG_HIDDEN bool vg__plan_add_succ_once(vg__plan *p, int *succ_cap, int from, int to);
VG_HIDDEN int *vg__plan_slot_producers(const vg__plan *p);
VG_HIDDEN bool *vg__plan_control_sources(const vg__plan *p);
/* AddN of MatMuls (an unrolled RNN's weight gradient) into one GEMM (fuse_matmul.c),
 * run by vg__plan_fuse before the element-wise pass; false on OOM. */
VG_HIDDEN bool vg__plan_fuse_matmul_sum(vg__plan *p, int *succ_cap);

/* Mixed precision (amp.c): is the rewrite on for the session; paint the plan's nodes
 * (before fusion; false on OOM); TF's list of an op type (0 none, 1 allow, 2 infer,
 * 3 deny, 4 clear); round a painted node's flagged inputs (replacing vals' slots) and
 * its float32 outputs to bfloat16 values. RESOURCE_EXHAUSTED. */
VG_HIDDEN bool vg__amp_session_on(const vg_session *s);
VG_HIDDEN bool vg__amp_paint(vg__plan *p);
VG_HIDDEN int vg__amp_list_of(const char *type);
VG_HIDDEN void vg__amp_round_f32(const float *src, float *dst, size_t n);
VG_HIDDEN vg_code vg__amp_round_inputs(vg__node *n, vg_tensor **vals, vg_status *st);
VG_HIDDEN vg_code vg__amp_round_outputs(vg__node *n, vg_tensor **vals, vg_tensor **outs, vg_status *st);

/* Running (executor.c). */
VG_HIDDEN vg_code vg__plan_run(vg_session *s, vg__plan *p, const vg_run_options *ro, vg_tensor *const *feed_values,
                               vg_tensor **out, vg_run_metadata *md, vg_status *st);
/* Frees the plan's cached run states (vg__plan_free). */
VG_HIDDEN void vg__plan_free_states(vg__plan *p);
/* Destroys the run's step resources (the end of a run). */
VG_HIDDEN void vg__step_res_free(vg__run_state *rs);

/* Sessions (session.c). The session's variable slot of VariableV2 op `op` (op known to
 * the session: plans are built after vg__session_extend). Lock s->mu held. */
static inline vg__var *vg__session_var(vg_session *s, const vg_op *op) {
    return (op->id < s->nops) ? s->vars[op->id] : NULL;
}

#endif
