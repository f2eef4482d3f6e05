/*
 * executor.c - the executor: runs a plan (plan.c) in dataflow order. One scheduler
 * runs every plan, as TF 1.15's executor.cc does: a plain graph is the root frame, a
 * while loop's body a child frame with iterations.
 *
 *  - Frame instances and iterations. A frame instance is created by the first Enter
 *    into it for a given (parent frame instance, parent iteration); each iteration has
 *    its own pending counts, dead counts and input tensors. An Enter with is_constant
 *    delivers its value to every iteration (a loop invariant). A NextIteration starts
 *    the next iteration, unless parallel_iterations iterations are outstanding: then it
 *    is deferred until the oldest one finishes. An iteration is freed when it has no
 *    outstanding ops or child frames and the one before it is freed; a frame instance
 *    when its Enters have all fired and all its iterations are freed (then its dead
 *    Exits are propagated to the parent).
 *  - Deadness. Switch outputs only the taken side; the other is dead. A node with a
 *    dead input is dead: it does not run and all its outputs are dead. Merge runs on
 *    its first live data input (once its control inputs are in), and is dead only if
 *    all data inputs are dead (or a dead Enter feeds it: a loop on an untaken branch).
 *    A dead NextIteration stops; a dead Exit is remembered and propagated when its
 *    frame is done (only those of the last iteration). ControlTrigger is never dead.
 *  - Variables. A VariableV2 node outputs a reference to its slot; Identity and the
 *    control-flow ops pass references on; every other node reads the variable when it
 *    runs (deref, below), after all it depends on; a fetch reads it when the fetched
 *    node completes. Reads take a reference to the value under the variable's lock;
 *    writers copy a buffer somebody still holds (vg__var_mutable), so a value once
 *    read is stable.
 *
 * Scheduling. Ready nodes wait in one deque of tasks. With one inter-op thread (or a
 * plan where no two nodes are ever ready together) the caller runs them alone, oldest
 * first (dataflow order), and takes no lock. Otherwise the caller and helper tasks on
 * the inter-op pool share the run under its lock, newest first: nodes that only move
 * tensors (control-flow ops, Consts, variable references, Identity) run inline under the
 * lock; kernels run outside it. The rules, one set for all plans:
 *  - A helper is started when the node just taken is expensive (measured >= 20 us, or
 *    not measured yet) or more expensive nodes are ready than helpers are on them;
 *    cheap nodes run on the thread that made them ready (a wake-up costs more).
 *  - A helper never takes a blocking node (a queue op) unless the caller itself waits
 *    in one (then the enqueue the caller's dequeue waits for must run somewhere), so a
 *    queue op never parks a pool thread other runs may need.
 *  - Nodes whose kernels split over every intra-op thread run one at a time, on whoever
 *    is free: side by side they would share the cores with one thread too many.
 *  - Plans with collectives take the caller's collective first, then nodes feeding
 *    collectives (their reduce starts while back-propagation goes on).
 *  - A caller with nothing to take helps the intra-op pool, spins for the pool's window,
 *    then sleeps until a node completes.
 * Closing the session (CANCELLED) and the run's timeout (DEADLINE_EXCEEDED) are checked
 * between nodes, so a loop that would never end does end.
 */
#include "exec.h"
#include <stdio.h>
#include <sys/time.h>

typedef struct vg__val {
    int node;
    vg_tensor *t;
    bool dead;
} vg__val;

/* Per node of an iteration. */
typedef struct vg__nstate {
    int pending;           /* inputs (Merge: control inputs) still to come */
    int dead;              /* dead inputs */
    int flags;             /* 1 = Merge got its live input, 2 = scheduled */
} vg__nstate;

struct vg__iter {
    vg__iter *next_free;
    vg_tensor **in;        /* per local input */
    vg__nstate *ns;        /* per local node */
    int outstanding_ops;
    int outstanding_frames;
    vg__frame *children;
};

struct vg__frame {
    int sid;
    vg__frame *parent;
    int64_t parent_iter;
    vg__frame *next_sibling; /* also the free-list link */
    vg__iter **ring;         /* iteration i at ring[i & (ring_cap - 1)] */
    int ring_cap;
    int64_t oldest;          /* oldest iteration not freed */
    int64_t iteration_count;
    int num_outstanding;
    int max_parallel;
    int num_pending_inputs;
    vg__val *invs;           /* loop invariants */
    int ninvs, invs_cap;
    vg__val *deferred;       /* NextIteration values waiting for a free iteration */
    int ndeferred, deferred_cap;
    int *dead_exits;         /* Exits that ran: 2 * node + (1 if it fired live) */
    int ndead_exits, dead_exits_cap;
};

#define LOCK(rs)                                                                                                   \
    do {                                                                                                           \
        if ((rs)->mt) pthread_mutex_lock(&(rs)->mu);                                                               \
    } while (0)
#define UNLOCK(rs)                                                                                                 \
    do {                                                                                                           \
        if ((rs)->mt) pthread_mutex_unlock(&(rs)->mu);                                                             \
    } while (0)

/* A kernel measured at this many ns or more (or not measured yet) is worth a hand-off
 * to another inter-op thread: on a machine where a wake-up or a migrated cache line
 * costs microseconds, running two cheap nodes side by side is slower than running them
 * one after the other. */
#define EXEC_EXPENSIVE_NS 20000

/* ------------------------------------------------------------------------ */
/* iterations and frames (recycled across runs of the plan) */

/* Allocates an iteration state for static frame sid (inputs all NULL). */
static vg__iter *iter_alloc(const vg__sframe *sf) {
    size_t nn = (size_t)sf->nnodes + 1, ni = (size_t)sf->ninputs + 1;
    vg__iter *it = vg__malloc(sizeof *it + ni * sizeof(vg_tensor *) + nn * sizeof(vg__nstate));
    if (!it) return NULL;
    /* pointers first: the 12-byte node states after them keep every field aligned */
    it->in = (vg_tensor **)(it + 1);
    it->ns = (vg__nstate *)(it->in + ni);
    memset(it->in, 0, ni * sizeof(vg_tensor *)); /* kept all-NULL while recycled */
    return it;
}

/* Readies an iteration state: every node waits for its edges. */
static void iter_reset(vg__iter *it, const vg__sframe *sf) {
    it->next_free = NULL;
    it->outstanding_ops = 0;
    it->outstanding_frames = 0;
    it->children = NULL;
    vg__nstate *ns = it->ns;
    const int *p0 = sf->pending0;
    for (int l = 0; l < sf->nnodes; l++) {
        ns[l].pending = p0[l];
        ns[l].dead = 0;
        ns[l].flags = 0;
    }
}

static vg__iter *iter_new(vg__run_state *rs, int sid) {
    const vg__sframe *sf = &rs->p->frames[sid];
    vg__iter *it = rs->free_iters[sid];
    if (it) rs->free_iters[sid] = it->next_free;
    else if (!(it = iter_alloc(sf))) { rs->oom = true; return NULL; }
    iter_reset(it, sf);
    return it;
}

static void frame_release(vg__run_state *rs, vg__frame *f);
static void iter_free(vg__run_state *rs, int sid, vg__iter *it);

/* Releases what an iteration still holds: inputs, child frames. */
static void iter_clear(vg__run_state *rs, int sid, vg__iter *it) {
    const vg__sframe *sf = &rs->p->frames[sid];
    for (int i = 0; i < sf->ninputs; i++)
        if (it->in[i]) {
            vg__val_free(it->in[i]);
            it->in[i] = NULL;
        }
    while (it->children) {
        vg__frame *c = it->children;
        it->children = c->next_sibling;
        for (int64_t k = c->oldest; k <= c->iteration_count; k++) {
            iter_free(rs, c->sid, c->ring[k & (c->ring_cap - 1)]);
            c->ring[k & (c->ring_cap - 1)] = NULL;
        }
        frame_release(rs, c);
    }
}

static void iter_free(vg__run_state *rs, int sid, vg__iter *it) {
    if (!it) return;
    iter_clear(rs, sid, it);
    it->next_free = rs->free_iters[sid];
    rs->free_iters[sid] = it;
}

/* Empties a frame instance's lists (their tensors released) for reuse. */
static void frame_clear(vg__frame *f) {
    for (int i = 0; i < f->ninvs; i++) vg__val_free(f->invs[i].t);
    for (int i = 0; i < f->ndeferred; i++) vg__val_free(f->deferred[i].t);
    f->ninvs = f->ndeferred = f->ndead_exits = 0;
}

static void frame_release(vg__run_state *rs, vg__frame *f) {
    frame_clear(f);
    f->next_sibling = rs->free_frames;
    rs->free_frames = f;
}

static void frame_destroy(vg__frame *f) {
    if (!f) return;
    frame_clear(f);
    vg__free(f->invs);
    vg__free(f->deferred);
    vg__free(f->dead_exits);
    vg__free(f->ring);
    vg__free(f);
}

static inline vg__iter *get_iter(vg__frame *f, int64_t i) {
    if (i < f->oldest || i > f->iteration_count) return NULL;
    return f->ring[i & (f->ring_cap - 1)];
}

static bool set_iter(vg__frame *f, int64_t i, vg__iter *it) {
    if (i - f->oldest >= f->ring_cap) {
        int nc = f->ring_cap * 2;
        while (i - f->oldest >= nc) nc *= 2;
        vg__iter **nr = vg__calloc((size_t)nc, sizeof(vg__iter *));
        if (!nr) return false;
        for (int64_t k = f->oldest; k < f->oldest + f->ring_cap && k <= f->iteration_count; k++)
            nr[k & (nc - 1)] = f->ring[k & (f->ring_cap - 1)];
        vg__free(f->ring);
        f->ring = nr;
        f->ring_cap = nc;
    }
    f->ring[i & (f->ring_cap - 1)] = it;
    return true;
}

/* Starts frame instance f (new or recycled) with its iteration 0. */
static bool frame_start(vg__run_state *rs, vg__frame *f, int sid, vg__frame *parent, int64_t parent_iter,
                        int max_parallel) {
    if (!f->ring) {
        f->ring_cap = 4;
        if (!(f->ring = vg__calloc(4, sizeof(vg__iter *)))) return false;
    }
    f->sid = sid;
    f->parent = parent;
    f->parent_iter = parent_iter;
    f->next_sibling = NULL;
    f->oldest = 0;
    f->iteration_count = 0;
    f->max_parallel = max_parallel;
    f->num_pending_inputs = rs->p->frames[sid].nenters;
    f->ninvs = f->ndeferred = f->ndead_exits = 0;
    vg__iter *it = iter_new(rs, sid);
    if (!it) return false;
    for (int k = 0; k < f->ring_cap; k++) f->ring[k] = NULL;
    f->ring[0] = it;
    f->num_outstanding = 1;
    return true;
}

static vg__frame *frame_new(vg__run_state *rs, int sid, vg__frame *parent, int64_t parent_iter, int max_parallel) {
    vg__frame *f = rs->free_frames;
    if (f) rs->free_frames = f->next_sibling;
    else if (!(f = vg__calloc(1, sizeof *f))) { rs->oom = true; return NULL; }
    if (!frame_start(rs, f, sid, parent, parent_iter, max_parallel)) {
        f->next_sibling = rs->free_frames;
        rs->free_frames = f;
        rs->oom = true;
        return NULL;
    }
    return f;
}

/* ------------------------------------------------------------------------ */
/* run states (one per concurrent run of a plan, recycled) */

/* Frees run state rs with what it holds (also one that state_new left partly built). */
static void state_destroy(vg__plan *p, vg__run_state *rs) {
    for (int i = 0; rs->free_iters && i < p->nframes; i++)
        while (rs->free_iters[i]) {
            vg__iter *it = rs->free_iters[i];
            rs->free_iters[i] = it->next_free;
            vg__free(it);
        }
    while (rs->free_frames) {
        vg__frame *f = rs->free_frames;
        rs->free_frames = f->next_sibling;
        frame_destroy(f);
    }
    frame_destroy(rs->root);
    vg__free(rs->root_it);
    vg__free(rs->free_iters);
    vg__free(rs->fetched);
    vg__free(rs->q);
    pthread_mutex_destroy(&rs->mu);
    pthread_cond_destroy(&rs->cv);
    vg__free(rs);
}

static vg__run_state *state_new(vg__plan *p) {
    vg__run_state *rs = vg__calloc(1, sizeof *rs);
    if (!rs) return NULL;
    pthread_mutex_init(&rs->mu, NULL);
    pthread_cond_init(&rs->cv, NULL);
    rs->qcap = p->nnodes + 8;
    rs->q = vg__malloc(sizeof(vg__task) * (size_t)rs->qcap);
    rs->fetched = vg__calloc((size_t)p->nfetches + 1, sizeof(vg_tensor *));
    rs->free_iters = vg__calloc((size_t)p->nframes + 1, sizeof(vg__iter *));
    rs->root = vg__calloc(1, sizeof *rs->root);
    rs->root_it = iter_alloc(&p->frames[0]);
    if (rs->root) rs->root->ring = vg__calloc(4, sizeof(vg__iter *));
    if (rs->root) rs->root->ring_cap = 4;
    if (!rs->q || !rs->fetched || !rs->free_iters || !rs->root || !rs->root_it || !rs->root->ring) {
        state_destroy(p, rs);
        return NULL;
    }
    return rs;
}

static vg__run_state *state_get(vg__plan *p) {
    vg__run_state *c = atomic_exchange(&p->cached, NULL);
    if (c) return c;
    pthread_mutex_lock(&p->mu);
    vg__run_state *rs = p->free_states;
    if (rs) p->free_states = rs->next_free;
    pthread_mutex_unlock(&p->mu);
    return rs ? rs : state_new(p);
}

static void state_put(vg__plan *p, vg__run_state *rs) {
    vg__run_state *expect = NULL;
    if (atomic_compare_exchange_strong(&p->cached, &expect, rs)) return;
    pthread_mutex_lock(&p->mu);
    rs->next_free = p->free_states;
    p->free_states = rs;
    pthread_mutex_unlock(&p->mu);
}

void vg__plan_free_states(vg__plan *p) {
    vg__run_state *c = atomic_exchange(&p->cached, NULL);
    if (c) state_destroy(p, c);
    while (p->free_states) {
        vg__run_state *rs = p->free_states;
        p->free_states = rs->next_free;
        state_destroy(p, rs);
    }
}

/* Drops one reference; the last one recycles the state. */
static void state_release(vg__run_state *rs) {
    vg__plan *p = rs->p;
    if (!rs->mt) { /* no helpers: the caller holds the only reference */
        state_put(p, rs);
        return;
    }
    pthread_mutex_lock(&rs->mu);
    bool last = --rs->refs == 0;
    pthread_mutex_unlock(&rs->mu);
    if (last) state_put(p, rs);
}

/* ------------------------------------------------------------------------ */
/* the ready deque */

static bool push_task(vg__run_state *rs, int node, vg__frame *f, int64_t iter, bool dead) {
    if (rs->qh > 0 && rs->qh == rs->qt) rs->qh = rs->qt = 0;
    if (rs->qt == rs->qcap) {
        if (rs->qh > 0) {
            memmove(rs->q, rs->q + rs->qh, sizeof(vg__task) * (size_t)(rs->qt - rs->qh));
            rs->qt -= rs->qh;
            rs->qh = 0;
        } else if (!vg__grow((void **)&rs->q, &rs->qcap, rs->qt + 1, sizeof(vg__task))) {
            rs->oom = true;
            return false;
        }
    }
    rs->q[rs->qt++] = (vg__task){node, dead, f, iter};
    return true;
}

/* Whether node n splits over the intra-op pool while that pool already has a thread
 * for every inter-op helper besides the caller: such a kernel keeps every thread busy. */
static bool node_splits_all(const vg__run_state *rs, const vg__node *n) {
    return atomic_load_explicit(&n->splits, memory_order_relaxed) &&
           rs->s->intra_threads >= rs->s->inter_helpers + 1;
}

/* One such node at a time: run side by side, two kernels would share the same cores
 * with one thread more than there are (the CNN's two conv2 gradients at 2 threads: 5.6
 * ms each side by side, 3.0 and 3.5 ms each split in turn). Lock held. */
static bool split_waits(const vg__run_state *rs, const vg__task *t) {
    return rs->split_running > 0 && !t->dead && node_splits_all(rs, &rs->p->nodes[t->node]);
}

/* A node that runs a kernel outside the lock (the rest only move tensors). */
static bool runs_kernel(const vg__node *n) { return n->kind == VG__K_KERNEL; }

static bool task_expensive(const vg__run_state *rs, const vg__task *t) {
    const vg__node *n = &rs->p->nodes[t->node];
    if (t->dead || !runs_kernel(n)) return false;
    int64_t c = atomic_load_explicit(&n->cost_ns, memory_order_relaxed);
    return c == 0 || c >= EXEC_EXPENSIVE_NS;
}

/* An expensive node whose kernel split its last run over the intra-op pool already
 * keeps the threads busy: running a second such node beside it on a helper only makes
 * the two compete for the same cores. */
static bool task_wants_helper(const vg__run_state *rs, const vg__task *t) {
    return task_expensive(rs, t) && !node_splits_all(rs, &rs->p->nodes[t->node]);
}

/* Takes a ready task (see the file comment for the rules). False if none. Lock held. */
static bool take_task(vg__run_state *rs, bool helper, vg__task *out) {
    if (rs->qh == rs->qt) return false;
    if (!rs->mt) {
        *out = rs->q[rs->qh++];
        return true;
    }
    const vg__plan *p = rs->p;
    int k = -1;
    if (p->collectives) {
        int best_pr = -1;
        for (int j = rs->qt - 1; j >= rs->qh && best_pr < 2; j--) {
            const vg__task *t = &rs->q[j];
            const vg__node *n = &p->nodes[t->node];
            if (helper && n->blocking && !t->dead) continue;
            int pr = t->dead ? 0 : n->collective ? 2 : n->feeds_collective ? 1 : 0;
            if (pr > best_pr) k = j, best_pr = pr;
        }
    } else {
        /* While the caller waits in a blocking node, a helper takes blocking nodes too:
         * the caller's dequeue may wait for an enqueue of the same run, which nobody
         * else would run (TF's executor runs any ready node on any of its threads). */
        bool skip_blocking = helper && !rs->caller_blocking;
        for (int j = rs->qt - 1; j >= rs->qh; j--) {
            const vg__task *t = &rs->q[j];
            if (skip_blocking && !t->dead && p->nodes[t->node].blocking) continue;
            if (split_waits(rs, t)) continue;
            k = j;
            break;
        }
    }
    if (k < 0) return false;
    *out = rs->q[k];
    rs->q[k] = rs->q[--rs->qt];
    return true;
}

/* Ready work left for helpers once this thread took task `taken`: when that task is
 * expensive (the rest would wait behind it), or more expensive ready tasks than helpers
 * on them. When everything is cheap this thread runs it all, soon (lock held; looks at
 * up to 32 ready tasks). Plans with collectives offer any ready work: their caller must
 * stay free for the next collective while the gradients feeding it run. */
static bool want_helper(const vg__run_state *rs, const vg__task *taken) {
    int nready = rs->qt - rs->qh;
    if (rs->helpers >= rs->s->inter_helpers || nready <= rs->helpers) return false;
    if (rs->p->collectives) return true;
    if (task_wants_helper(rs, taken)) return true;
    int nexp = 0;
    for (int j = rs->qt - 1; j >= rs->qh && j >= rs->qt - 32; j--)
        if (task_wants_helper(rs, &rs->q[j]) && ++nexp > rs->helpers) return true;
    return false;
}

/* ------------------------------------------------------------------------ */
/* delivering outputs (TF's PropagateOutputs / ActivateNodes) */

/* Delivers the outputs of `node` (outs[k] NULL = dead; all dead if node_dead) to its
 * successors in iteration `iter` of frame f. */
static void activate(vg__run_state *rs, int node, bool node_dead, vg_tensor **outs, bool can_move, vg__frame *f,
                     int64_t iter) {
    vg__iter *it = get_iter(f, iter);
    const vg__node *src = &rs->p->nodes[node];
    if (!it) return;
    for (int k = 0; k < src->nout; k++) {
        const vg__edge *e = &src->out[k];
        const vg__node *d = &rs->p->nodes[e->dst];
        int l = d->lidx;
        bool ready = false, ddead = false, need_input = false;
        vg_tensor *t = (e->src_out >= 0 && !node_dead) ? outs[e->src_out] : NULL;
        if (it->ns[l].flags & 2) continue; /* already scheduled (a Merge's later inputs) */
        if (d->kind == VG__K_MERGE) {
            if (e->dst_in < 0) {
                it->ns[l].pending--;
                ddead = it->ns[l].dead == d->ndata;
                ready = it->ns[l].pending == 0 && ((it->ns[l].flags & 1) || ddead);
            } else if (t) {
                need_input = !(it->ns[l].flags & 1);
                it->ns[l].flags |= 1;
                ready = it->ns[l].pending == 0;
            } else {
                it->ns[l].dead++;
                ddead = it->ns[l].dead == d->ndata || src->kind == VG__K_ENTER;
                ready = it->ns[l].pending == 0 && ddead && !(it->ns[l].flags & 1);
            }
        } else {
            if (node_dead || (e->dst_in >= 0 && !t)) it->ns[l].dead++;
            need_input = e->dst_in >= 0 && t;
            ready = --it->ns[l].pending == 0;
            ddead = it->ns[l].dead > 0;
        }
        if (need_input) {
            vg_tensor **slot = &it->in[d->in_base + e->dst_in];
            if (*slot) vg__val_free(*slot);
            if (can_move && e->last) { /* the last use takes the producer's reference */
                *slot = t;
                outs[e->src_out] = NULL;
            } else {
                *slot = vg__val_dup(t);
            }
        }
        if (ready) {
            if (d->kind == VG__K_TRIGGER) ddead = false;
            it->ns[l].flags |= 2;
            it->outstanding_ops++;
            push_task(rs, e->dst, f, iter, ddead);
        }
    }
}

static bool frame_done(vg__frame *f) { return f->num_pending_inputs == 0 && f->num_outstanding == 0; }

static bool iteration_done(vg__frame *f, int64_t i) {
    vg__iter *it = get_iter(f, i);
    if (!it || it->outstanding_ops != 0 || it->outstanding_frames != 0) return false;
    if (i == f->oldest) return i == 0 ? f->num_pending_inputs == 0 : true;
    return false;
}

static void increment_iteration(vg__run_state *rs, vg__frame *f) {
    int64_t next = f->iteration_count + 1;
    vg__iter *it = iter_new(rs, f->sid);
    if (!it) return;
    if (!set_iter(f, next, it)) {
        iter_free(rs, f->sid, it);
        rs->oom = true;
        return;
    }
    f->iteration_count = next;
    f->num_outstanding++;
    f->ndead_exits = 0; /* TF's dead_exits.clear(): only the last iteration's dead Exits propagate */
    for (int i = 0; i < f->ninvs; i++) {
        vg_tensor *outs[1] = {f->invs[i].t};
        activate(rs, f->invs[i].node, f->invs[i].dead, outs, false, f, next);
    }
}

static void delete_frame(vg__run_state *rs, vg__frame *f);

/* TF's CleanupFramesIterations: frees finished iterations of f from `iter` on, starts
 * deferred iterations, and frees f itself when it is done. */
static void cleanup(vg__run_state *rs, vg__frame *f, int64_t iter) {
    if (!f->parent) return; /* the root's one iteration lives until the run ends (plan_run) */
    int64_t cur = iter;
    while (cur <= f->iteration_count && iteration_done(f, cur)) {
        vg__iter *it = get_iter(f, cur);
        f->ring[cur & (f->ring_cap - 1)] = NULL;
        iter_free(rs, f->sid, it);
        f->oldest = cur + 1;
        f->num_outstanding--;
        cur++;
        if (f->ndeferred) {
            increment_iteration(rs, f);
            int nd = f->ndeferred;
            f->ndeferred = 0;
            for (int i = 0; i < nd; i++) {
                vg_tensor *outs[1] = {f->deferred[i].t};
                activate(rs, f->deferred[i].node, false, outs, true, f, f->iteration_count);
                if (outs[0]) vg__val_free(outs[0]);
            }
        }
    }
    if (f->parent && frame_done(f)) delete_frame(rs, f);
}

static void delete_frame(vg__run_state *rs, vg__frame *f) {
    vg__frame *parent = f->parent;
    int64_t pi = f->parent_iter;
    vg__iter *pit = get_iter(parent, pi);
    for (int i = 0; i < f->ndead_exits; i++)
        if (!(f->dead_exits[i] & 1)) activate(rs, f->dead_exits[i] / 2, true, NULL, false, parent, pi);
    if (pit) {
        for (vg__frame **pp = &pit->children; *pp; pp = &(*pp)->next_sibling)
            if (*pp == f) { *pp = f->next_sibling; break; }
        pit->outstanding_frames--;
    }
    for (int64_t k = f->oldest; k <= f->iteration_count; k++) { /* none left when it is done */
        iter_free(rs, f->sid, f->ring[k & (f->ring_cap - 1)]);
        f->ring[k & (f->ring_cap - 1)] = NULL;
    }
    frame_release(rs, f);
    if (pit && pit->outstanding_ops == 0 && pit->outstanding_frames == 0) cleanup(rs, parent, pi);
}

static void decrement_outstanding(vg__run_state *rs, vg__frame *f, int64_t iter) {
    vg__iter *it = get_iter(f, iter);
    if (!it) return;
    if (--it->outstanding_ops != 0) return;
    cleanup(rs, f, iter);
}

static vg__frame *child_frame(vg__run_state *rs, vg__frame *f, int64_t iter, const vg__node *enter) {
    vg__iter *it = get_iter(f, iter);
    if (!it) return NULL;
    for (vg__frame *c = it->children; c; c = c->next_sibling)
        if (c->sid == enter->child) return c;
    vg__frame *c = frame_new(rs, enter->child, f, iter, rs->p->frames[enter->child].parallel);
    if (!c) return NULL;
    c->next_sibling = it->children;
    it->children = c;
    it->outstanding_frames++;
    return c;
}

/* Records the run's first error and stops it. Lock held. */
static void fail(vg__run_state *rs, const vg_status *e) {
    if (!rs->stop) {
        rs->stop = true;
        vg_status_copy(&rs->err, e);
        if (rs->err.code == VG_OK) rs->err.code = VG_INTERNAL;
    }
}

/* Fails the run with CANCELLED when its session is closing, or DEADLINE_EXCEEDED when
 * its deadline has passed (naming node n, about to run; e receives the error); true
 * then, false when the run may go on. Lock held. */
static bool run_interrupted(vg__run_state *rs, const vg__node *n, vg_status *e) {
    if (atomic_load_explicit(&rs->s->closing, memory_order_relaxed))
        vg_status_set(e, VG_CANCELLED, "Session was closed while the run was executing (at '%s')", n->op->name);
    else if (rs->deadline && vg__now_ns() > rs->deadline)
        vg_status_set(e, VG_DEADLINE_EXCEEDED, "Timed out: the run exceeded its timeout (at '%s')", n->op->name);
    else
        return false;
    fail(rs, e);
    return true;
}

/* Reads variable v for a consumer: a new reference of its value. */
static vg_tensor *deref(vg__var *v, vg_status *st) {
    pthread_mutex_lock(&v->mu);
    vg_tensor *t = vg_tensor_ref(v->value);
    pthread_mutex_unlock(&v->mu);
    if (!t) vg_status_set(st, VG_FAILED_PRECONDITION, "Attempting to use uninitialized value %s", v->op->name);
    return t;
}

/* A finished root-frame node's fetched outputs are taken (a variable reference is read
 * now). Lock held. */
static void take_fetches(vg__run_state *rs, int node, vg_tensor **outs) {
    const vg__plan *p = rs->p;
    const vg__node *c = &p->nodes[node];
    for (int k = 0; k < c->noutputs; k++) {
        int fi = c->fetch_of[k];
        if (fi < 0 || !outs[k] || rs->fetched[fi]) continue;
        vg_tensor *v = outs[k];
        vg_status e;
        e.code = VG_OK;
        bool read = vg__val_is_ref(v);
        if (read && !(v = deref(vg__val_var(v), &e))) {
            size_t len = strlen(e.msg);
            snprintf(e.msg + len, sizeof e.msg - len, "\n\t [[node %s (%s)]]", c->op->name, c->def->type);
            fail(rs, &e);
            continue;
        }
        /* the session keeps a variable's or a Const's value: the caller gets its own
         * copy, made here (vg_session_run copies what is still shared at the end) */
        if (read || p->fetch_copy[fi]) {
            vg_tensor *cp = vg_tensor_copy(v, &e);
            if (read) vg_tensor_free(v);
            if (!cp) {
                rs->oom = true;
                continue;
            }
            rs->fetched[fi] = cp;
        } else {
            rs->fetched[fi] = vg_tensor_ref(v);
        }
        for (int j = p->fetch_next[fi]; j >= 0; j = p->fetch_next[j]) /* every fetch of this output */
            rs->fetched[j] = vg_tensor_ref(rs->fetched[fi]);
    }
}

/* Propagates the outputs of a finished node. Lock held. */
static void propagate(vg__run_state *rs, const vg__task *t, vg_tensor **outs) {
    const vg__plan *p = rs->p;
    const vg__node *c = &p->nodes[t->node];
    vg__frame *f = t->f;
    int64_t iter = t->iter;
    if (c->fetch_of && !t->dead && (c->kind == VG__K_EXIT ? f->parent == rs->root : f == rs->root))
        take_fetches(rs, t->node, outs);
    switch (c->kind) {
    case VG__K_ENTER: {
        vg__frame *child = child_frame(rs, f, iter, c);
        if (!child) return;
        if (c->is_constant) {
            if (!vg__grow((void **)&child->invs, &child->invs_cap, child->ninvs + 1, sizeof(vg__val))) {
                rs->oom = true;
                return;
            }
            child->invs[child->ninvs++] = (vg__val){t->node, t->dead ? NULL : vg__val_dup(outs[0]), t->dead};
            for (int64_t k = child->oldest; k <= child->iteration_count; k++)
                activate(rs, t->node, t->dead, outs, false, child, k);
        } else {
            activate(rs, t->node, t->dead, outs, true, child, 0);
        }
        child->num_pending_inputs--;
        vg__iter *cit = get_iter(child, 0);
        if (child->num_pending_inputs == 0 && cit && cit->outstanding_ops == 0 && cit->outstanding_frames == 0)
            cleanup(rs, child, 0);
        break;
    }
    case VG__K_EXIT: {
        /* Each Exit of the frame instance is remembered once (entry 2 * node + live); at
         * the end of the frame the ones that never fired live reach the parent dead (a
         * loop on an untaken branch). TF remembers a dead Exit when it runs in the newest
         * iteration, which with concurrent nodes can also be a non-final iteration, whose
         * deadness would then reach a consumer that still waits on other inputs. */
        int k = 0;
        while (k < f->ndead_exits && f->dead_exits[k] / 2 != t->node) k++;
        if (k == f->ndead_exits) {
            if (!vg__grow((void **)&f->dead_exits, &f->dead_exits_cap, f->ndead_exits + 1, sizeof(int))) {
                rs->oom = true;
                return;
            }
            f->dead_exits[f->ndead_exits++] = 2 * t->node;
        }
        if (!t->dead) {
            f->dead_exits[k] |= 1;
            activate(rs, t->node, false, outs, true, f->parent, f->parent_iter);
        }
        break;
    }
    case VG__K_NEXT:
        if (t->dead) break;
        if (iter == f->iteration_count && f->num_outstanding >= f->max_parallel) {
            if (!vg__grow((void **)&f->deferred, &f->deferred_cap, f->ndeferred + 1, sizeof(vg__val))) {
                rs->oom = true;
                return;
            }
            f->deferred[f->ndeferred++] = (vg__val){t->node, vg__val_dup(outs[0]), false};
        } else {
            if (iter == f->iteration_count) increment_iteration(rs, f);
            activate(rs, t->node, false, outs, true, f, iter + 1);
        }
        break;
    default:
        activate(rs, t->node, t->dead, outs, true, f, iter);
        break;
    }
    if (f->parent) decrement_outstanding(rs, f, iter);
}

/* ------------------------------------------------------------------------ */
/* running one node */

static int64_t wall_us(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
}

static int64_t input_bytes(const vg__node *n, vg_tensor *const *in) {
    int64_t b = 0;
    for (int k = 0; k < n->ninputs; k++)
        if (in[k] && !vg__val_is_ref(in[k])) b += (int64_t)vg_tensor_nbytes(in[k]);
    return b;
}

static void record_stats(vg__run_state *rs, const vg__node *n, int64_t t0, int64_t t1, int64_t bytes, int64_t read) {
    vg_run_metadata *md = rs->md;
    pthread_mutex_lock(&md->mu);
    if (vg__grow((void **)&md->nodes, &md->cap, md->n + 1, sizeof(vg_node_stats))) {
        vg_node_stats *ns = &md->nodes[md->n++];
        ns->node_name = n->op->name;
        ns->op_type = n->def->type;
        ns->start_us = t0;
        ns->end_us = t1;
        ns->thread_id = vg__pool_thread_id();
        ns->bytes_allocated = bytes;
        ns->bytes_read = read;
    }
    pthread_mutex_unlock(&md->mu);
}

/* The nodes that only move tensors (lock held when mt): fills outs (NULL = dead). */
static vg_code run_inline(vg__run_state *rs, vg__node *n, vg_tensor **in, vg_tensor **outs, vg_status *st) {
    switch (n->kind) {
    case VG__K_SWITCH: {
        if (n->ninputs < 2 || !in[0]) return vg_status_set(st, VG_INTERNAL, "Switch without input");
        if (vg__val_is_ref(in[1]) && !(in[1] = deref(vg__val_var(in[1]), st))) return st->code;
        vg_tensor *pred = in[1];
        if (!pred || vg_tensor_dtype(pred) != VG_BOOL || vg_tensor_ndims(pred) != 0)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "The second input must be a scalar bool, but it has shape %s",
                                 pred ? (vg_tensor_ndims(pred) ? "non-scalar" : "[] of another dtype") : "none");
        bool b = *(const bool *)vg_tensor_data(pred);
        outs[b ? 1 : 0] = in[0];
        in[0] = NULL;
        return VG_OK;
    }
    case VG__K_MERGE: {
        int k = 0;
        while (k < n->ninputs && !in[k]) k++;
        if (k == n->ninputs) return vg_status_set(st, VG_INTERNAL, "Merge ran without a live input");
        outs[0] = in[k];
        in[k] = NULL;
        if (n->noutputs > 1 && n->need_index) {
            outs[1] = vg_tensor_new(VG_INT32, NULL, 0, st);
            if (!outs[1]) return st->code;
            *(int32_t *)vg_tensor_data(outs[1]) = k;
        }
        return VG_OK;
    }
    case VG__K_LOOPCOND:
        if (n->ninputs < 1 || !in[0]) return vg_status_set(st, VG_INTERNAL, "LoopCond without input");
        if (vg__val_is_ref(in[0]) && !(in[0] = deref(vg__val_var(in[0]), st))) return st->code;
        if (vg_tensor_dtype(in[0]) != VG_BOOL || vg_tensor_ndims(in[0]) != 0)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "LoopCond's input must be a scalar bool");
        outs[0] = in[0];
        in[0] = NULL;
        return VG_OK;
    case VG__K_ENTER:
    case VG__K_EXIT:
    case VG__K_NEXT:
    case VG__K_IDENTITY:
        if (n->ninputs < 1 || !in[0]) return vg_status_set(st, VG_INTERNAL, "%s without input", n->def->type);
        outs[0] = in[0];
        in[0] = NULL;
        return VG_OK;
    case VG__K_TRIGGER:
        return VG_OK;
    case VG__K_CONST:
        outs[0] = vg_tensor_ref(n->const_value);
        return outs[0] ? VG_OK : vg_status_set(st, VG_INTERNAL, "Const without a value");
    case VG__K_VARIABLE:
        outs[0] = vg__val_ref_of(n->var);
        return VG_OK;
    default:
        return vg_status_set(st, VG_INTERNAL, "node kind %d is not run inline", n->kind);
    }
}

/* Runs a kernel node: reads the variables its inputs refer to, then the kernel. */
static inline __attribute__((always_inline)) vg_code run_kernel(vg__run_state *rs, vg__node *n, vg_tensor **vals, vg_tensor **outs, vg_status *st) {
    if (n->may_deref)
        for (int k = 0; k < n->ninputs; k++) {
            int sl = n->in_slot[k];
            if (sl < 0 || !vg__val_is_ref(vals[sl])) continue;
            if (!(vals[sl] = deref(vg__val_var(vals[sl]), st))) return st->code;
        }
    if (!n->def->kernel) return vg_status_set(st, VG_UNIMPLEMENTED, "no CPU kernel for op type %s", n->def->type);
    if (n->amp && vg__amp_round_inputs(n, vals, st)) return st->code;
    vg__kctx ctx = {rs, n, outs, st, vals};
    vg_code rc = n->def->kernel(&ctx);
    if (rc == VG_OK && st->code != VG_OK) rc = st->code;
    if (rc == VG_OK && n->amp) rc = vg__amp_round_outputs(n, vals, outs, st);
    for (int i = 0; rc == VG_OK && i < n->noutputs; i++)
        if (!outs[i] && n->out_needed && n->out_needed[i])
            rc = vg_status_set(st, VG_INTERNAL, "kernel %s did not produce output %d", n->def->type, i);
    return rc;
}

static void work(vg__run_state *rs, bool helper);

static void helper_task(void *arg) {
    vg__run_state *rs = arg;
    work(rs, true); /* leaves rs->helpers one lower (see there) */
    state_release(rs);
}

/* Something happened that a waiting caller may want to see (tasks ready, the run
 * ended or stopped, a split node done). Lock held. */
static void notify(vg__run_state *rs) {
    atomic_fetch_add_explicit(&rs->progress, 1, memory_order_release);
    if (rs->caller_waits) pthread_cond_signal(&rs->cv);
}

/* The caller has nothing to take while nodes run elsewhere: take shares of their
 * kernels' splits meanwhile (never a helper task: the caller stays free for the
 * blocking and collective nodes only it takes), spin for one window, then sleep until
 * something happens. Lock held on entry and exit. */
static void caller_wait(vg__run_state *rs) {
    unsigned seen = atomic_load_explicit(&rs->progress, memory_order_relaxed);
    pthread_mutex_unlock(&rs->mu);
    vg__pool *pool = rs->s->inter;
    int64_t spin = vg__pool_spin_ns(pool), t0 = vg__pool_now_ns();
    for (unsigned it = 0; atomic_load_explicit(&rs->progress, memory_order_acquire) == seen; it++) {
        if (vg__pool_help(pool)) continue;
        vg__spin_pause();
        if ((it & 15) == 15 && vg__pool_now_ns() - t0 > spin) {
            pthread_mutex_lock(&rs->mu);
            rs->caller_waits = true;
            while (atomic_load_explicit(&rs->progress, memory_order_relaxed) == seen)
                pthread_cond_wait(&rs->cv, &rs->mu);
            rs->caller_waits = false;
            return;
        }
    }
    pthread_mutex_lock(&rs->mu);
}

/* The worker loop of the caller (until the run ends) and of helpers (until no node is
 * ready for them). */
/* The worker loop of a plan without loops run by the caller alone: the same steps as
 * work() with what cannot happen left out (no frames but the root, no dead tensors, no
 * Merge, no other thread): oldest ready node first. */
static void work_seq(vg__run_state *rs) {
    vg__plan *p = rs->p;
    vg__iter *it = rs->root_it;
    vg__nstate *ns = it->ns;
    vg_tensor **in = it->in;
    vg_tensor *outs_local[8] = {NULL}; /* all NULL at the top of each node */
    while (rs->qh < rs->qt && !rs->stop && !rs->oom) {
        int id = rs->q[rs->qh++].node;
        vg__node *n = &p->nodes[id];
        vg_status e;
        e.code = VG_OK;
        e.msg[0] = 0;
        if ((++rs->tick & 15) == 0 && run_interrupted(rs, n, &e)) break;
        vg_tensor **outs = outs_local;
        if (n->noutputs > 8 && !(outs = vg__calloc((size_t)n->noutputs, sizeof(vg_tensor *)))) {
            rs->oom = true;
            break;
        }
        int64_t t0 = rs->trace ? wall_us() : 0;
        vg_code rc = VG_OK;
        if (n->kind == VG__K_CONST && n->const_value) outs[0] = vg_tensor_ref(n->const_value);
        else if (n->kind == VG__K_VARIABLE) outs[0] = vg__val_ref_of(n->var);
        else rc = runs_kernel(n) ? run_kernel(rs, n, in, outs, &e) : run_inline(rs, n, in + n->in_base, outs, &e);
        if (rs->trace) {
            int64_t bytes = 0;
            for (int i = 0; i < n->noutputs; i++)
                if (outs[i] && !vg__val_is_ref(outs[i])) bytes += (int64_t)vg_tensor_nbytes(outs[i]);
            record_stats(rs, n, t0, wall_us(), bytes, input_bytes(n, in + n->in_base));
        }
        for (int k = 0; k < n->ninputs; k++) {
            vg_tensor **slot = &in[n->in_base + k];
            if (*slot) {
                vg__val_free(*slot);
                *slot = NULL;
            }
        }
        if (rc != VG_OK) {
            size_t len = strlen(e.msg);
            snprintf(e.msg + len, sizeof e.msg - len, "\n\t [[node %s (%s)]]", n->op->name, n->def->type);
            fail(rs, &e);
        } else {
            if (n->fetch_of) take_fetches(rs, id, outs);
            for (int k = 0; k < n->nout; k++) { /* activate() without frames, deadness or Merge */
                const vg__edge *ed = &n->out[k];
                const vg__node *d = &p->nodes[ed->dst];
                if (ed->dst_in >= 0) {
                    vg_tensor **slot = &in[d->in_base + ed->dst_in];
                    if (*slot) vg__val_free(*slot);
                    if (ed->last) {
                        *slot = outs[ed->src_out];
                        outs[ed->src_out] = NULL;
                    } else {
                        *slot = vg__val_dup(outs[ed->src_out]);
                    }
                }
                if (--ns[d->lidx].pending == 0) {
                    ns[d->lidx].flags |= 2;
                    rs->q[rs->qt++] = (vg__task){ed->dst, false, rs->root, 0}; /* each node once: q has room */
                }
            }
        }
        for (int i = 0; i < n->noutputs; i++)
            if (outs[i]) {
                vg__val_free(outs[i]);
                outs[i] = NULL;
            }
        if (outs != outs_local) vg__free(outs);
    }
}

static void work(vg__run_state *rs, bool helper) {
    vg__plan *p = rs->p;
    vg_session *s = rs->s;
    vg_tensor *outs_local[8] = {NULL}; /* all NULL at the top of each task */
    LOCK(rs);
    for (;;) {
        if (rs->finished) { /* a late helper */
            rs->helpers--;
            break;
        }
        vg__task t;
        bool have = !rs->stop && !rs->oom && take_task(rs, helper, &t);
        if (!have) {
            /* A helper stops counting in the same critical section as its last look:
             * counted until it returned, it made a caller that took a dequeue just
             * then start no helper, and the enqueue the dequeue waited for (ready, but
             * blocking, so skipped in that last look) never ran. */
            if (helper) {
                rs->helpers--;
                break;
            }
            if (rs->inflight == 0) break; /* done (or stopped with nothing running) */
            caller_wait(rs);
            continue;
        }
        vg__node *n = &p->nodes[t.node];
        vg_status e;
        e.code = VG_OK;
        e.msg[0] = 0;
        if (!t.dead && ((++rs->tick & 15) == 0 || n->kind == VG__K_NEXT) && run_interrupted(rs, n, &e)) continue;
        vg__iter *it = get_iter(t.f, t.iter);
        if (!it) {
            vg_status_set(&e, VG_INTERNAL, "executor: iteration %lld of '%s' is gone", (long long)t.iter, n->op->name);
            fail(rs, &e);
            continue;
        }
        vg_tensor **outs = outs_local;
        if (n->noutputs > 8 && !(outs = vg__calloc((size_t)n->noutputs, sizeof(vg_tensor *)))) {
            rs->oom = true;
            continue;
        }
        vg_code rc = VG_OK;
        bool freed = false;
        if (!t.dead) {
            int64_t t0 = rs->trace ? wall_us() : 0;
            if (!runs_kernel(n)) {
                rc = run_inline(rs, n, it->in + n->in_base, outs, &e);
            } else if (!rs->mt) {
                rc = run_kernel(rs, n, it->in, outs, &e);
            } else {
                bool blocking = !helper && n->blocking; /* set before anyone looks again (take_task) */
                if (blocking) rs->caller_blocking = true;
                bool split = node_splits_all(rs, n);
                if (split) rs->split_running++;
                int nready = rs->qt - rs->qh;
                bool spawn = want_helper(rs, &t) ||
                             (blocking && rs->helpers < s->inter_helpers && nready > rs->helpers);
                if (spawn) {
                    rs->helpers++;
                    rs->refs++;
                }
                rs->inflight++;
                pthread_mutex_unlock(&rs->mu);
                if (spawn && !vg__pool_submit(s->inter, helper_task, rs)) {
                    pthread_mutex_lock(&rs->mu);
                    rs->helpers--;
                    rs->refs--;
                    pthread_mutex_unlock(&rs->mu);
                }
                int64_t k0 = vg__now_ns();
                rc = run_kernel(rs, n, it->in, outs, &e);
                int64_t dt = vg__now_ns() - k0, old = atomic_load_explicit(&n->cost_ns, memory_order_relaxed);
                if (dt < 1) dt = 1;
                atomic_store_explicit(&n->cost_ns, old ? (3 * old + dt) / 4 : dt, memory_order_relaxed);
                pthread_mutex_lock(&rs->mu);
                rs->inflight--;
                if (blocking) rs->caller_blocking = false;
                /* a split node done: a caller waiting with only split nodes ready wakes too */
                freed = split && --rs->split_running == 0 && rs->qt > rs->qh;
            }
            if (rs->trace) {
                int64_t bytes = 0;
                for (int i = 0; i < n->noutputs; i++)
                    if (outs[i] && !vg__val_is_ref(outs[i])) bytes += (int64_t)vg_tensor_nbytes(outs[i]);
                record_stats(rs, n, t0, wall_us(), bytes, input_bytes(n, it->in + n->in_base));
            }
        }
        if (rc != VG_OK) {
            for (int i = 0; i < n->noutputs; i++)
                if (outs[i]) {
                    vg__val_free(outs[i]);
                    outs[i] = NULL;
                }
            if (outs != outs_local) vg__free(outs);
            size_t len = strlen(e.msg);
            snprintf(e.msg + len, sizeof e.msg - len, "\n\t [[node %s (%s)]]", n->op->name, n->def->type);
            fail(rs, &e);
            if (rs->mt) notify(rs);
            continue;
        }
        /* the node's inputs are consumed */
        for (int k = 0; k < n->ninputs; k++) {
            vg_tensor **slot = &it->in[n->in_base + k];
            if (*slot) {
                vg__val_free(*slot);
                *slot = NULL;
            }
        }
        int before = rs->qt - rs->qh;
        propagate(rs, &t, outs);
        for (int i = 0; i < n->noutputs; i++)
            if (outs[i]) {
                vg__val_free(outs[i]);
                outs[i] = NULL;
            }
        if (outs != outs_local) vg__free(outs);
        if (rs->mt && (rs->qt - rs->qh > before || freed || (rs->inflight == 0 && rs->qt == rs->qh) || rs->stop))
            notify(rs);
    }
    UNLOCK(rs);
}

/* ------------------------------------------------------------------------ */

void vg__step_res_free(vg__run_state *rs) {
    pthread_mutex_lock(&rs->mu);
    vg__step_res *r = rs->step_res;
    rs->step_res = NULL;
    pthread_mutex_unlock(&rs->mu);
    while (r) {
        vg__step_res *next = r->next;
        if (r->destroy) r->destroy(r->ptr);
        vg__free(r);
        r = next;
    }
}

/* Delivers a fed value along edge e into the root iteration 0 (scheduled with the
 * roots, plan_run). */
static void feed_edge(vg__run_state *rs, vg__iter *it0, const vg__edge *e, vg_tensor *v) {
    const vg__node *d = &rs->p->nodes[e->dst];
    int l = d->lidx;
    vg_tensor **slot = &it0->in[d->in_base + e->dst_in];
    if (d->kind == VG__K_MERGE) { /* its first live input */
        if (it0->ns[l].flags & 1) return;
        it0->ns[l].flags |= 1;
        *slot = vg_tensor_ref(v);
        return;
    }
    if (*slot) vg__val_free(*slot);
    *slot = vg_tensor_ref(v);
    it0->ns[l].pending--;
}

/* The mode of a parallel plan's run (see vg__plan.ab_seq): after EXEC_AB_WARM runs in
 * parallel, EXEC_AB_RUNS runs of each mode alternate, then the plan keeps the caller-alone
 * mode only where its fastest run beat the fastest parallel one by 10% (noise favours
 * neither: the minimum of each). Plans with blocking or collective nodes always run in
 * parallel (a node may wait on another of the same run). Returns the run's slot in the
 * schedule (-1: not timed) and sets *mt. */
#define EXEC_AB_WARM 2
#define EXEC_AB_RUNS 4
static int ab_mode(vg__plan *p, bool *mt) {
    *mt = p->parallel;
    if (!p->parallel) return -1;
    int seq = atomic_load_explicit(&p->ab_seq, memory_order_relaxed);
    if (seq) {
        *mt = seq == 2;
        return -1;
    }
    int r = atomic_fetch_add_explicit(&p->ab_runs, 1, memory_order_relaxed);
    if (r < EXEC_AB_WARM) return -1;
    if (r == EXEC_AB_WARM) { /* first look: a plan that must stay parallel */
        for (int i = 0; i < p->nnodes; i++)
            if (p->nodes[i].blocking || p->nodes[i].collective) {
                atomic_store_explicit(&p->ab_seq, 2, memory_order_relaxed);
                return -1;
            }
    }
    if (r >= EXEC_AB_WARM + 2 * EXEC_AB_RUNS) return -1;
    *mt = ((r - EXEC_AB_WARM) & 1) != 0;
    return r - EXEC_AB_WARM;
}

static void ab_record(vg__plan *p, int slot, bool mt, int64_t ns) {
    _Atomic int64_t *m = &p->ab_min_ns[mt ? 1 : 0];
    int64_t old = atomic_load_explicit(m, memory_order_relaxed);
    while ((old == 0 || ns < old) && !atomic_compare_exchange_weak_explicit(m, &old, ns, memory_order_relaxed,
                                                                              memory_order_relaxed)) {
    }
    if (slot == 2 * EXEC_AB_RUNS - 1) {
        int64_t s = atomic_load_explicit(&p->ab_min_ns[0], memory_order_relaxed),
                t = atomic_load_explicit(&p->ab_min_ns[1], memory_order_relaxed);
        int expect = 0;
        atomic_compare_exchange_strong_explicit(&p->ab_seq, &expect, s > 0 && t > 0 && s * 10 < t * 9 ? 1 : 2,
                                                memory_order_relaxed, memory_order_relaxed);
    }
}

static vg_code plan_run(vg_session *s, vg__plan *p, const vg_run_options *ro, vg_tensor *const *feed_values,
                        vg_tensor **out, vg_run_metadata *md, vg_status *st) {
    vg__run_state *rs = state_get(p);
    if (!rs) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory starting a run");
    rs->s = s;
    rs->p = p;
    rs->ro = ro;
    rs->md = md;
    rs->trace = md && ro && ro->trace_level >= VG_TRACE_FULL;
    rs->deadline = (ro && ro->timeout_in_ms > 0) ? vg__now_ns() + ro->timeout_in_ms * 1000000LL : 0;
    bool mt;
    int ab_slot = md ? -1 : ab_mode(p, &mt); /* (traced runs are not timed) */
    if (md) mt = p->parallel && atomic_load_explicit(&p->ab_seq, memory_order_relaxed) != 1;
    int64_t t_start = ab_slot >= 0 ? vg__now_ns() : 0;
    rs->mt = mt;
    rs->qh = rs->qt = 0;
    rs->inflight = rs->helpers = rs->split_running = 0;
    rs->refs = 1;
    rs->caller_blocking = rs->caller_waits = rs->stop = rs->oom = rs->finished = false;
    rs->err.code = VG_OK;
    rs->err.msg[0] = 0;
    rs->step_res = NULL;
    vg_code rc = VG_OK;
    /* the root frame and its one iteration (out[] is all NULL: vg_session_run) */
    vg__frame *root = rs->root;
    vg__iter *it0 = rs->root_it;
    root->sid = 0;
    root->parent = NULL;
    root->oldest = root->iteration_count = 0;
    root->max_parallel = root->num_outstanding = 1;
    root->num_pending_inputs = 0;
    iter_reset(it0, &p->frames[0]);
    root->ring[0] = it0;
    /* fed values first, then the roots (no input from another node) in node order: the
     * order of a topological sort, so a sequential run takes an enqueue of a fed value
     * before a dequeue built after it */
    for (int fi = 0; fi < p->nfeeds; fi++) {
        for (int k = 0; k < p->nfeed_out[fi]; k++) feed_edge(rs, it0, &p->feed_out[fi][k], feed_values[fi]);
        for (int j = 0; j < p->nfetches; j++)
            if (p->fetch_feed[j] == fi && !rs->fetched[j]) rs->fetched[j] = vg_tensor_ref(feed_values[fi]);
    }
    for (int i = 0; i < p->nroots; i++) { /* (q has room for every node) */
        int r = p->roots[i], l = p->nodes[r].lidx;
        vg__nstate *ns = &it0->ns[l];
        if (ns->pending != 0 || (p->nodes[r].kind == VG__K_MERGE && !(ns->flags & 1))) continue;
        ns->flags |= 2;
        it0->outstanding_ops++;
        rs->q[rs->qt++] = (vg__task){r, ns->dead > 0, root, 0};
    }
    if (!rs->mt && !p->loops) work_seq(rs);
    else work(rs, false);
    LOCK(rs);
    rs->finished = true; /* helpers still queued only drop their reference from now on */
    rs->qh = rs->qt = 0;
    UNLOCK(rs);
    if (rs->stop) {
        rc = rs->err.code;
        vg_status_copy(st, &rs->err);
    }
    if (rc == VG_OK && rs->oom) rc = vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory running the plan");
    if (rc == VG_OK) {
        for (int i = 0; i < p->nfetches; i++) {
            if (rs->fetched[i]) continue;
            const vg_op *fop = p->fetch_node[i] >= 0 ? p->nodes[p->fetch_node[i]].op : NULL;
            rc = vg_status_set(st, VG_INVALID_ARGUMENT,
                               "fetch %d ('%s') has no value: it is dead (on the untaken side of a cond) or was "
                               "never computed", i, fop ? fop->name : "?");
            break;
        }
    }
    for (int i = 0; i < p->nfetches; i++) {
        if (rc == VG_OK) out[i] = rs->fetched[i];
        else vg_tensor_free(rs->fetched[i]);
        rs->fetched[i] = NULL;
    }
    if (rc != VG_OK || p->loops) { /* else every node ran and took its inputs */
        iter_clear(rs, 0, it0);
        frame_clear(root);
    }
    if (rs->step_res) vg__step_res_free(rs);
    state_release(rs);
    if (ab_slot >= 0 && rc == VG_OK) ab_record(p, ab_slot, mt, vg__now_ns() - t_start);
    return rc;
}

/* The session's pools spin for their longer window while the run is in progress. */
vg_code vg__plan_run(vg_session *s, vg__plan *p, const vg_run_options *ro, vg_tensor *const *feed_values,
                     vg_tensor **out, vg_run_metadata *md, vg_status *st) {
    vg__pool_run_begin(s->intra);
    if (s->inter != s->intra) vg__pool_run_begin(s->inter);
    vg_code rc = plan_run(s, p, ro, feed_values, out, md, st);
    if (s->inter != s->intra) vg__pool_run_end(s->inter);
    vg__pool_run_end(s->intra);
    return rc;
}
