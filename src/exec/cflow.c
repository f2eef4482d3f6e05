/*
 * cflow.c - running plans with control flow: TF1's frames and iterations.
 *
 * A plan whose ops include Switch, Merge, Enter, Exit, NextIteration, LoopCond or
 * ControlTrigger gets a vg__cf_plan (built by vg__cf_build when the plan is built and
 * cached with it, like every plan). It follows TF 1.15's executor.cc:
 *
 *  - Static frames. Every node runs in one frame: the root frame, or the frame that an
 *    Enter names (attr frame_name); the successors of an Enter are in its child frame,
 *    the successors of an Exit in the parent frame (TF's BuildControlFlowInfo). A node
 *    reached in two frames makes the plan INVALID_ARGUMENT.
 *  - Frame instances and iterations at run time. A frame instance is created by the
 *    first Enter into it for a given (parent frame instance, parent iteration); each
 *    iteration has its own pending counts, dead counts and input tensors. An Enter with
 *    is_constant delivers its value to every iteration (a loop invariant). A
 *    NextIteration starts the next iteration, unless parallel_iterations iterations are
 *    outstanding: then it is deferred until the oldest one finishes. An iteration is
 *    freed when it has no outstanding ops or child frames and the one before it is
 *    freed; a frame instance when its Enters have all fired and all its iterations are
 *    freed (then its dead Exits are propagated to the parent).
 *  - Deadness. Switch outputs only the taken side; the other is dead. A node with a
 *    dead input is dead: it does not run and all its outputs are dead. Merge runs on
 *    its first live data input (once its control inputs are in), and is dead only if
 *    all data inputs are dead (or a dead Enter feeds it: a loop on an untaken branch).
 *    A dead NextIteration stops; a dead Exit is remembered and propagated when its
 *    frame is done (only those of the last iteration: starting an iteration forgets
 *    the earlier ones, as TF's IncrementIteration does). ControlTrigger is never dead.
 *
 * With an inter-op pool, independent ready nodes run at once (see work()); with one
 * inter-op thread the run is sequential on the caller's thread and takes no lock.
 * Closing the session (CANCELLED) or the run's timeout
 * (DEADLINE_EXCEEDED) end a loop that would never terminate: both are checked between
 * nodes.
 */
#include "exec.h"
#include <stdio.h>

enum { CF_NONE, CF_SWITCH, CF_MERGE, CF_ENTER, CF_EXIT, CF_NEXT, CF_LOOPCOND, CF_TRIGGER };

typedef struct cf_edge {
    int dst;     /* plan node */
    int src_out; /* output of the source (-1: control edge) */
    int dst_in;  /* input of dst (-1: control edge) */
    bool last;   /* the source output's last data edge: its reference can be moved */
} cf_edge;

typedef struct cf_node {
    int kind;
    int frame;        /* static frame the node runs in */
    int child;        /* Enter: static frame of its outputs */
    bool is_constant; /* Enter */
    int parallel;     /* Enter: parallel_iterations */
    int lidx;         /* index among the nodes of its frame */
    int in_base;      /* first input's index in its frame's per-iteration input array */
    int ndata;        /* data inputs */
    int nctrl;        /* control inputs (in the plan) */
    cf_edge *out;
    int nout, out_cap;
    int *fetch_of;    /* per output: first fetch index fed by it, -1 none (root frame only) */
    bool need_index;  /* Merge: output 1 (value_index) is used */
} cf_node;

typedef struct cf_sframe {
    char *name;       /* frame_name ("" for the root) */
    int parent;
    int nnodes;       /* nodes running in the frame */
    int ninputs;      /* their inputs */
    int nenters;      /* Enter nodes into it */
    int parallel;     /* parallel_iterations: the least of its Enters' (they agree in TF's graphs) */
    int *nodes;       /* plan node of each local index */
} cf_sframe;

struct vg__cf_plan {
    cf_node *nodes;
    int nnodes;
    cf_sframe *frames;
    int nframes, frames_cap;
    cf_edge **feed_out; /* per feed: edges from the fed value */
    int *nfeed_out;
    int nfeeds, nfetches;
    int *roots;
    int nroots;
    int *fetch_feed;   /* per fetch: feed index if the fetched tensor is fed, else -1 */
    _Atomic int64_t *cost_ns; /* per node: running average of its kernel's time (0: not measured) */
};

bool vg__cf_is_cflow_type(const char *t) {
    return strcmp(t, "Switch") == 0 || strcmp(t, "Merge") == 0 || strcmp(t, "Enter") == 0 ||
           strcmp(t, "Exit") == 0 || strcmp(t, "NextIteration") == 0 || strcmp(t, "LoopCond") == 0 ||
           strcmp(t, "ControlTrigger") == 0 || strcmp(t, "RefEnter") == 0 || strcmp(t, "RefSwitch") == 0 ||
           strcmp(t, "RefMerge") == 0 || strcmp(t, "RefExit") == 0 || strcmp(t, "RefNextIteration") == 0;
}

static int kind_of(const char *t) {
    if (strcmp(t, "Switch") == 0 || strcmp(t, "RefSwitch") == 0) return CF_SWITCH;
    if (strcmp(t, "Merge") == 0 || strcmp(t, "RefMerge") == 0) return CF_MERGE;
    if (strcmp(t, "Enter") == 0 || strcmp(t, "RefEnter") == 0) return CF_ENTER;
    if (strcmp(t, "Exit") == 0 || strcmp(t, "RefExit") == 0) return CF_EXIT;
    if (strcmp(t, "NextIteration") == 0 || strcmp(t, "RefNextIteration") == 0) return CF_NEXT;
    if (strcmp(t, "LoopCond") == 0) return CF_LOOPCOND;
    if (strcmp(t, "ControlTrigger") == 0) return CF_TRIGGER;
    return CF_NONE;
}

void vg__cf_free(vg__cf_plan *cf) {
    if (!cf) return;
    for (int i = 0; cf->nodes && i < cf->nnodes; i++) {
        vg__free(cf->nodes[i].out);
        vg__free(cf->nodes[i].fetch_of);
    }
    vg__free(cf->nodes);
    for (int i = 0; cf->frames && i < cf->nframes; i++) {
        vg__free(cf->frames[i].name);
        vg__free(cf->frames[i].nodes);
    }
    vg__free(cf->frames);
    for (int i = 0; cf->feed_out && i < cf->nfeeds; i++) vg__free(cf->feed_out[i]);
    vg__free(cf->feed_out);
    vg__free(cf->nfeed_out);
    vg__free(cf->roots);
    vg__free(cf->fetch_feed);
    vg__free((void *)cf->cost_ns);
    vg__free(cf);
}

static bool add_edge(cf_edge **v, int *n, int *cap, cf_edge e) {
    if (!vg__grow((void **)v, cap, *n + 1, sizeof(cf_edge))) return false;
    (*v)[(*n)++] = e;
    return true;
}

static int frame_id(vg__cf_plan *cf, const char *name, int parent) {
    for (int i = 0; i < cf->nframes; i++)
        if (strcmp(cf->frames[i].name, name) == 0) return i;
    if (!vg__grow((void **)&cf->frames, &cf->frames_cap, cf->nframes + 1, sizeof(cf_sframe))) return -1;
    cf_sframe *f = &cf->frames[cf->nframes];
    memset(f, 0, sizeof *f);
    f->name = vg__strdup(name);
    f->parent = parent;
    if (!f->name) return -1;
    return cf->nframes++;
}

vg_code vg__cf_build(vg_session *s, vg__plan *p, const int *op_node, const int *feed_of, const int *out_off,
                     const vg_output *feeds, const vg_output *fetches, vg_status *st) {
    (void)s;
    int nn = p->nnodes;
    vg__cf_plan *cf = vg__calloc(1, sizeof *cf);
    int *queue = NULL, *fcap = NULL, *ecap = NULL;
    if (!cf) goto oom;
    p->cf = cf;
    cf->nnodes = nn;
    cf->nfeeds = p->nfeeds;
    cf->nfetches = p->nfetches;
    cf->nodes = vg__calloc((size_t)nn + 1, sizeof(cf_node));
    cf->feed_out = vg__calloc((size_t)p->nfeeds + 1, sizeof(cf_edge *));
    cf->nfeed_out = vg__calloc((size_t)p->nfeeds + 1, sizeof(int));
    fcap = vg__calloc((size_t)p->nfeeds + 1, sizeof(int));
    ecap = vg__calloc((size_t)nn + 1, sizeof(int));
    cf->fetch_feed = vg__malloc(sizeof(int) * (size_t)(p->nfetches + 1));
    queue = vg__malloc(sizeof(int) * (size_t)(nn + 1));
    cf->roots = vg__malloc(sizeof(int) * (size_t)(nn + 1));
    cf->cost_ns = vg__calloc((size_t)nn + 1, sizeof(*cf->cost_ns));
    if (!cf->cost_ns || !cf->nodes || !cf->feed_out || !cf->nfeed_out || !fcap || !ecap || !cf->fetch_feed || !queue || !cf->roots)
        goto oom;
    if (frame_id(cf, "", -1) != 0) goto oom;
    for (int i = 0; i < nn; i++) {
        cf_node *c = &cf->nodes[i];
        c->kind = kind_of(p->nodes[i].def->type);
        c->frame = -1;
        c->child = -1;
    }
    /* edges */
    for (int i = 0; i < nn; i++) {
        vg__node *n = &p->nodes[i];
        vg_op *op = n->op;
        for (int k = 0; k < op->ninputs; k++) {
            if (n->in_slot[k] < 0) continue; /* ref input straight from a variable */
            vg_output in = op->inputs[k];
            int f = out_off[in.op->id] + in.index;
            cf_edge e = {i, in.index, k, false};
            cf->nodes[i].ndata++;
            if (feed_of[f] >= 0) {
                int fi = feed_of[f];
                if (!add_edge(&cf->feed_out[fi], &cf->nfeed_out[fi], &fcap[fi], e)) goto oom;
            } else {
                int src = op_node[in.op->id];
                if (!add_edge(&cf->nodes[src].out, &cf->nodes[src].nout, &ecap[src], e)) goto oom;
            }
        }
        for (int k = 0; k < op->ncontrol; k++) {
            int src = op_node[op->control[k]->id];
            if (src < 0) continue;
            cf_edge e = {i, -1, -1, false};
            cf->nodes[i].nctrl++;
            if (!add_edge(&cf->nodes[src].out, &cf->nodes[src].nout, &ecap[src], e)) goto oom;
        }
    }
    for (int i = 0; i < nn; i++) {
        cf_node *c = &cf->nodes[i];
        for (int k = 0; k < c->nout; k++) {
            if (c->out[k].src_out == 1) c->need_index = true;
            bool later = false;
            for (int j = k + 1; j < c->nout && !later; j++) later = c->out[j].src_out == c->out[k].src_out;
            c->out[k].last = c->out[k].src_out >= 0 && !later;
        }
    }
    /* fetches */
    for (int i = 0; i < p->nfetches; i++) {
        int f = out_off[fetches[i].op->id] + fetches[i].index;
        cf->fetch_feed[i] = feed_of[f];
        if (feed_of[f] >= 0) continue;
        cf_node *c = &cf->nodes[op_node[fetches[i].op->id]];
        if (!c->fetch_of) {
            int no = fetches[i].op->noutputs;
            if (!(c->fetch_of = vg__malloc(sizeof(int) * (size_t)(no + 1)))) goto oom;
            for (int k = 0; k < no; k++) c->fetch_of[k] = -1;
        }
        if (c->fetch_of[fetches[i].index] < 0) c->fetch_of[fetches[i].index] = i;
        if (fetches[i].index == 1) c->need_index = true;
    }
    /* static frames: BFS from the roots and the fed tensors' consumers */
    int qh = 0, qt = 0;
    for (int i = 0; i < nn; i++) {
        cf_node *c = &cf->nodes[i];
        if (c->ndata + c->nctrl == 0) {
            cf->roots[cf->nroots++] = i;
            c->frame = 0;
            queue[qt++] = i;
        }
    }
    for (int fi = 0; fi < p->nfeeds; fi++)
        for (int k = 0; k < cf->nfeed_out[fi]; k++) {
            int d = cf->feed_out[fi][k].dst;
            if (cf->nodes[d].frame < 0) {
                cf->nodes[d].frame = 0;
                queue[qt++] = d;
            }
        }
    while (qh < qt) {
        int i = queue[qh++];
        cf_node *c = &cf->nodes[i];
        vg_op *op = p->nodes[i].op;
        int out_frame = c->frame;
        if (c->kind == CF_ENTER) {
            const char *fname = NULL;
            size_t len = 0;
            if (!vg_op_attr_string(op, "frame_name", &fname, &len) || len == 0) {
                vg_status_set(st, VG_INVALID_ARGUMENT, "Enter '%s' has no frame_name", op->name);
                goto fail;
            }
            char buf[512];
            snprintf(buf, sizeof buf, "%.*s", (int)len, fname);
            int fid = frame_id(cf, buf, c->frame);
            if (fid < 0) goto oom;
            if (cf->frames[fid].parent != c->frame) {
                vg_status_set(st, VG_INVALID_ARGUMENT, "frame '%s' is entered from two different frames (at '%s')",
                              buf, op->name);
                goto fail;
            }
            c->child = fid;
            bool b = false;
            c->is_constant = vg_op_attr_bool(op, "is_constant", &b) && b;
            int64_t pi = 10;
            vg_op_attr_int(op, "parallel_iterations", &pi);
            c->parallel = pi < 1 ? 1 : (pi > (1 << 20) ? (1 << 20) : (int)pi);
            cf->frames[fid].nenters++;
            if (cf->frames[fid].parallel == 0 || c->parallel < cf->frames[fid].parallel)
                cf->frames[fid].parallel = c->parallel;
            out_frame = fid;
        } else if (c->kind == CF_EXIT) {
            if (c->frame == 0) {
                vg_status_set(st, VG_INVALID_ARGUMENT, "Exit '%s' is not inside a while loop frame", op->name);
                goto fail;
            }
            out_frame = cf->frames[c->frame].parent;
        }
        for (int k = 0; k < c->nout; k++) {
            int d = c->out[k].dst;
            if (cf->nodes[d].frame < 0) {
                cf->nodes[d].frame = out_frame;
                queue[qt++] = d;
            } else if (cf->nodes[d].frame != out_frame) {
                vg_status_set(st, VG_INVALID_ARGUMENT,
                              "'%s' has inputs from different frames: '%s' is in frame '%s', '%s' in frame '%s'",
                              p->nodes[d].op->name, op->name, cf->frames[out_frame].name,
                              p->nodes[d].op->name, cf->frames[cf->nodes[d].frame].name);
                goto fail;
            }
        }
    }
    for (int i = 0; i < nn; i++)
        if (cf->nodes[i].frame < 0) {
            vg_status_set(st, VG_INVALID_ARGUMENT, "'%s' is in a cycle that no Enter starts", p->nodes[i].op->name);
            goto fail;
        }
    for (int i = 0; i < p->nfetches; i++) {
        if (cf->fetch_feed[i] >= 0) continue;
        cf_node *c = &cf->nodes[op_node[fetches[i].op->id]];
        int of = c->kind == CF_EXIT ? cf->frames[c->frame].parent : c->kind == CF_ENTER ? -1 : c->frame;
        if (of != 0) {
            vg_status_set(st, VG_INVALID_ARGUMENT, "cannot fetch '%s:%d': it is inside the while loop frame '%s'",
                          fetches[i].op->name, fetches[i].index, cf->frames[c->frame].name);
            goto fail;
        }
    }
    for (int fi = 0; fi < p->nfeeds; fi++)
        for (int k = 0; k < cf->nfeed_out[fi]; k++)
            if (cf->nodes[cf->nfeed_out[fi] ? cf->feed_out[fi][k].dst : 0].frame != 0) {
                vg_status_set(st, VG_INVALID_ARGUMENT, "cannot feed '%s:%d': a consumer is inside a while loop",
                              feeds[fi].op->name, feeds[fi].index);
                goto fail;
            }
    /* local numbering */
    for (int i = 0; i < nn; i++) {
        cf_node *c = &cf->nodes[i];
        cf_sframe *f = &cf->frames[c->frame];
        c->lidx = f->nnodes++;
        c->in_base = f->ninputs;
        f->ninputs += p->nodes[i].ninputs;
    }
    for (int fi = 0; fi < cf->nframes; fi++) {
        cf->frames[fi].nodes = vg__malloc(sizeof(int) * (size_t)(cf->frames[fi].nnodes + 1));
        if (!cf->frames[fi].nodes) goto oom;
    }
    for (int i = 0; i < nn; i++) {
        cf_node *c = &cf->nodes[i];
        cf->frames[c->frame].nodes[c->lidx] = i;
        vg__node *n = &p->nodes[i];
        for (int k = 0; k < n->ninputs; k++)
            if (n->in_slot[k] >= 0) n->in_slot[k] = c->in_base + k;
    }
    vg__free(queue);
    vg__free(fcap);
    vg__free(ecap);
    return VG_OK;
oom:
    vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory building a control-flow plan");
fail:
    vg__free(queue);
    vg__free(fcap);
    vg__free(ecap);
    return st ? st->code : VG_INTERNAL;
}

/* ------------------------------------------------------------------------ */
/* running */

typedef struct cf_frame cf_frame;

typedef struct cf_iter {
    vg_tensor **in;        /* per local input */
    int *pending;          /* per local node: inputs (Merge: control inputs) still to come */
    int *dead;             /* per local node: dead inputs */
    unsigned char *flags;  /* per local node: 1 = Merge got its live input, 2 = scheduled */
    int outstanding_ops;
    int outstanding_frames;
    cf_frame *children;
} cf_iter;

typedef struct cf_val {
    int node;
    vg_tensor *t;
    bool dead;
} cf_val;

struct cf_frame {
    int sid;
    cf_frame *parent;
    int64_t parent_iter;
    cf_frame *next_sibling;
    cf_iter **ring;        /* iteration i at ring[i & (cap - 1)] */
    int ring_cap;
    int64_t oldest;        /* oldest iteration not freed */
    int64_t iteration_count;
    int num_outstanding;
    int max_parallel;
    int num_pending_inputs;
    cf_val *invs;          /* loop invariants */
    int ninvs, invs_cap;
    cf_val *deferred;      /* NextIteration values waiting for a free iteration */
    int ndeferred, deferred_cap;
    int *dead_exits;       /* Exits that ran: 2 * node + (1 if it fired live) */
    int ndead_exits, dead_exits_cap;
};

typedef struct cf_task {
    int node;
    cf_frame *f;
    int64_t iter;
    bool dead;
    bool expensive; /* worth handing to another inter-op thread */
} cf_task;

/* One run. With inter-op threads (mt) the caller and helper tasks on the inter-op
 * pool share it: everything below is guarded by mu except what a kernel running
 * outside the lock reads (its own input slots, which nothing else writes while it is
 * scheduled). Helpers hold a reference, so a helper that a busy pool starts late finds
 * the run finished and only drops its reference. */
typedef struct cf_run {
    vg__run_state *rs;
    vg__plan *p;
    vg__cf_plan *cf;
    cf_task *q;
    int qh, qt, qcap;
    cf_frame *root;
    vg_tensor **fetched;
    bool oom;
    cf_iter **free_iters; /* per static frame: recycled iteration states */
    /* concurrency */
    bool mt;              /* the inter-op pool may take nodes */
    int pool_size;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int inflight;         /* nodes running outside the lock */
    int helpers;          /* helper tasks queued or running */
    int refs;             /* the caller + helpers */
    int nexpensive;       /* expensive tasks in the queue */
    bool caller_waits;    /* the caller sleeps on cv */
    bool stop;            /* an error: take no more nodes */
    bool finished;        /* the caller has ended the run */
    unsigned tick;
    vg_code rc;
    vg_status err;        /* the first error */
} cf_run;

#define CF_LOCK(r)                                                                                                 \
    do {                                                                                                           \
        if ((r)->mt) pthread_mutex_lock(&(r)->mu);                                                                 \
    } while (0)
#define CF_UNLOCK(r)                                                                                               \
    do {                                                                                                           \
        if ((r)->mt) pthread_mutex_unlock(&(r)->mu);                                                               \
    } while (0)

/* A kernel measured at this many ns or more (or not measured yet) is worth a hand-off
 * to another inter-op thread (waking one costs a few microseconds). */
#define CF_EXPENSIVE_NS 20000

static cf_iter *iter_new(cf_run *r, int sid) {
    cf_sframe *sf = &r->cf->frames[sid];
    size_t nn = (size_t)sf->nnodes + 1, ni = (size_t)sf->ninputs + 1;
    cf_iter *it = r->free_iters ? r->free_iters[sid] : NULL;
    if (it) {
        r->free_iters[sid] = (cf_iter *)it->in[0];
        memset(it, 0, sizeof *it + ni * sizeof(vg_tensor *) + 2 * nn * sizeof(int) + nn);
    } else {
        it = vg__calloc(1, sizeof *it + ni * sizeof(vg_tensor *) + 2 * nn * sizeof(int) + nn);
    }
    if (!it) { r->oom = true; return NULL; }
    char *q = (char *)(it + 1);
    it->in = (vg_tensor **)q;
    q += ni * sizeof(vg_tensor *);
    it->pending = (int *)q;
    q += nn * sizeof(int);
    it->dead = (int *)q;
    q += nn * sizeof(int);
    it->flags = (unsigned char *)q;
    for (int l = 0; l < sf->nnodes; l++) {
        const cf_node *c = &r->cf->nodes[sf->nodes[l]];
        it->pending[l] = c->kind == CF_MERGE ? c->nctrl : c->ndata + c->nctrl;
    }
    return it;
}

static void frame_free(cf_frame *f);

static void iter_free(cf_run *r, int sid, cf_iter *it) {
    if (!it) return;
    cf_sframe *sf = &r->cf->frames[sid];
    for (int i = 0; i < sf->ninputs; i++) vg_tensor_free(it->in[i]);
    while (it->children) {
        cf_frame *c = it->children;
        it->children = c->next_sibling;
        for (int64_t k = c->oldest; k <= c->iteration_count; k++) iter_free(r, c->sid, c->ring[k & (c->ring_cap - 1)]);
        frame_free(c);
    }
    if (r->free_iters) { /* recycle: the free list is linked through in[0] */
        it->in[0] = (vg_tensor *)r->free_iters[sid];
        r->free_iters[sid] = it;
        return;
    }
    vg__free(it);
}

static void frame_free(cf_frame *f) {
    for (int i = 0; i < f->ninvs; i++) vg_tensor_free(f->invs[i].t);
    for (int i = 0; i < f->ndeferred; i++) vg_tensor_free(f->deferred[i].t);
    vg__free(f->invs);
    vg__free(f->deferred);
    vg__free(f->dead_exits);
    vg__free(f->ring);
    vg__free(f);
}

static inline cf_iter *get_iter(cf_frame *f, int64_t i) {
    if (i < f->oldest || i > f->iteration_count) return NULL;
    return f->ring[i & (f->ring_cap - 1)];
}

static bool set_iter(cf_frame *f, int64_t i, cf_iter *it) {
    if (i - f->oldest >= f->ring_cap) {
        int nc = f->ring_cap * 2;
        while (i - f->oldest >= nc) nc *= 2;
        cf_iter **nr = vg__calloc((size_t)nc, sizeof(cf_iter *));
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

static cf_frame *frame_new(cf_run *r, int sid, cf_frame *parent, int64_t parent_iter, int max_parallel) {
    cf_frame *f = vg__calloc(1, sizeof *f);
    if (!f) { r->oom = true; return NULL; }
    f->sid = sid;
    f->parent = parent;
    f->parent_iter = parent_iter;
    f->max_parallel = max_parallel;
    f->num_pending_inputs = r->cf->frames[sid].nenters;
    f->ring_cap = 4;
    f->ring = vg__calloc(4, sizeof(cf_iter *));
    cf_iter *it = f->ring ? iter_new(r, sid) : NULL;
    if (!it) {
        vg__free(f->ring);
        vg__free(f);
        r->oom = true;
        return NULL;
    }
    f->ring[0] = it;
    f->num_outstanding = 1;
    return f;
}

static bool push_task(cf_run *r, int node, cf_frame *f, int64_t iter, bool dead) {
    if (r->qh > 0 && r->qh == r->qt) r->qh = r->qt = 0;
    if (r->qt == r->qcap) {
        if (r->qh > r->qcap / 2) {
            memmove(r->q, r->q + r->qh, sizeof(cf_task) * (size_t)(r->qt - r->qh));
            r->qt -= r->qh;
            r->qh = 0;
        } else if (!vg__grow((void **)&r->q, &r->qcap, r->qt + 1, sizeof(cf_task))) {
            r->oom = true;
            return false;
        }
    }
    bool expensive = false;
    if (r->mt && !dead && r->cf->nodes[node].kind == CF_NONE) {
        const vg__node *n = &r->p->nodes[node];
        int64_t c = atomic_load_explicit(&r->cf->cost_ns[node], memory_order_relaxed);
        expensive = !n->is_var_read && !(n->def->flags & VG__OP_CONST) && (c == 0 || c >= CF_EXPENSIVE_NS);
    }
    r->nexpensive += expensive;
    r->q[r->qt++] = (cf_task){node, f, iter, dead, expensive};
    return true;
}

/* Delivers the outputs of `node` (outs[k] NULL = dead; all dead if node_dead) to its
 * successors in iteration `iter` of frame f (TF's ActivateNodes). */
static void activate(cf_run *r, int node, bool node_dead, vg_tensor **outs, bool can_move, cf_frame *f,
                     int64_t iter) {
    cf_iter *it = get_iter(f, iter);
    const cf_node *src = &r->cf->nodes[node];
    if (!it) return;
    for (int k = 0; k < src->nout; k++) {
        const cf_edge *e = &src->out[k];
        const cf_node *d = &r->cf->nodes[e->dst];
        int l = d->lidx;
        bool ready = false, ddead = false, need_input = false;
        vg_tensor *t = (e->src_out >= 0 && !node_dead) ? outs[e->src_out] : NULL;
        if (it->flags[l] & 2) continue; /* already scheduled (a Merge's later inputs) */
        if (d->kind == CF_MERGE) {
            if (e->dst_in < 0) {
                it->pending[l]--;
                if (node_dead) { /* a dead control input still counts as arrived */ }
                ddead = it->dead[l] == d->ndata;
                ready = it->pending[l] == 0 && ((it->flags[l] & 1) || ddead);
            } else if (t) {
                need_input = !(it->flags[l] & 1);
                it->flags[l] |= 1;
                ready = it->pending[l] == 0;
            } else {
                it->dead[l]++;
                ddead = it->dead[l] == d->ndata || src->kind == CF_ENTER;
                ready = it->pending[l] == 0 && ddead && !(it->flags[l] & 1);
            }
        } else {
            if (node_dead || (e->dst_in >= 0 && !t)) it->dead[l]++;
            need_input = e->dst_in >= 0 && t;
            ready = --it->pending[l] == 0;
            ddead = it->dead[l] > 0;
        }
        if (need_input) {
            vg_tensor **slot = &it->in[d->in_base + e->dst_in];
            vg_tensor_free(*slot);
            if (can_move && e->last) { /* the last use takes the producer's reference */
                *slot = t;
                outs[e->src_out] = NULL;
            } else {
                *slot = vg_tensor_ref(t);
            }
        }
        if (ready) {
            if (d->kind == CF_TRIGGER) ddead = false;
            it->flags[l] |= 2;
            it->outstanding_ops++;
            push_task(r, e->dst, f, iter, ddead);
        }
    }
}

static bool frame_done(cf_frame *f) { return f->num_pending_inputs == 0 && f->num_outstanding == 0; }

static bool iteration_done(cf_frame *f, int64_t i) {
    cf_iter *it = get_iter(f, i);
    if (!it || it->outstanding_ops != 0 || it->outstanding_frames != 0) return false;
    if (i == f->oldest) return i == 0 ? f->num_pending_inputs == 0 : true;
    return false;
}

static void increment_iteration(cf_run *r, cf_frame *f) {
    int64_t next = f->iteration_count + 1;
    cf_iter *it = iter_new(r, f->sid);
    if (!it) return;
    if (!set_iter(f, next, it)) {
        iter_free(r, f->sid, it);
        r->oom = true;
        return;
    }
    f->iteration_count = next;
    f->num_outstanding++;
    f->ndead_exits = 0; /* TF's dead_exits.clear(): only the last iteration's dead Exits propagate */
    for (int i = 0; i < f->ninvs; i++) {
        vg_tensor *outs[1] = {f->invs[i].t};
        activate(r, f->invs[i].node, f->invs[i].dead, outs, false, f, next);
    }
}

static void delete_frame(cf_run *r, cf_frame *f);

/* TF's CleanupFramesIterations: frees finished iterations of f from `iter` on, starts
 * deferred iterations, and frees f itself when it is done. */
static void cleanup(cf_run *r, cf_frame *f, int64_t iter) {
    int64_t cur = iter;
    while (cur <= f->iteration_count && iteration_done(f, cur)) {
        cf_iter *it = get_iter(f, cur);
        f->ring[cur & (f->ring_cap - 1)] = NULL;
        iter_free(r, f->sid, it);
        f->oldest = cur + 1;
        f->num_outstanding--;
        cur++;
        if (f->ndeferred) {
            increment_iteration(r, f);
            int nd = f->ndeferred;
            f->ndeferred = 0;
            for (int i = 0; i < nd; i++) {
                vg_tensor *outs[1] = {f->deferred[i].t};
                activate(r, f->deferred[i].node, false, outs, true, f, f->iteration_count);
                vg_tensor_free(outs[0]);
            }
        }
    }
    if (f->parent && frame_done(f)) delete_frame(r, f);
}

static void delete_frame(cf_run *r, cf_frame *f) {
    cf_frame *parent = f->parent;
    int64_t pi = f->parent_iter;
    cf_iter *pit = get_iter(parent, pi);
    for (int i = 0; i < f->ndead_exits; i++)
        if (!(f->dead_exits[i] & 1)) activate(r, f->dead_exits[i] / 2, true, NULL, false, parent, pi);
    if (pit) {
        for (cf_frame **pp = &pit->children; *pp; pp = &(*pp)->next_sibling)
            if (*pp == f) { *pp = f->next_sibling; break; }
        pit->outstanding_frames--;
    }
    frame_free(f);
    if (pit && pit->outstanding_ops == 0 && pit->outstanding_frames == 0) cleanup(r, parent, pi);
}

static void decrement_outstanding(cf_run *r, cf_frame *f, int64_t iter) {
    cf_iter *it = get_iter(f, iter);
    if (!it) return;
    if (--it->outstanding_ops != 0) return;
    cleanup(r, f, iter);
}

static cf_frame *child_frame(cf_run *r, cf_frame *f, int64_t iter, const cf_node *enter) {
    cf_iter *it = get_iter(f, iter);
    if (!it) return NULL;
    for (cf_frame *c = it->children; c; c = c->next_sibling)
        if (c->sid == enter->child) return c;
    cf_frame *c = frame_new(r, enter->child, f, iter, r->cf->frames[enter->child].parallel);
    if (!c) return NULL;
    c->next_sibling = it->children;
    it->children = c;
    it->outstanding_frames++;
    return c;
}

/* Propagates the outputs of a finished node (TF's PropagateOutputs). */
static void propagate(cf_run *r, const cf_task *t, vg_tensor **outs) {
    const cf_node *c = &r->cf->nodes[t->node];
    cf_frame *f = t->f;
    int64_t iter = t->iter;
    if (c->fetch_of && !t->dead && (c->kind == CF_EXIT ? f->parent == r->root : f == r->root)) {
        for (int k = 0; k < r->p->nodes[t->node].noutputs; k++) {
            int fi = c->fetch_of[k];
            if (fi < 0 || !outs[k]) continue;
            /* every fetch of this output */
            for (int j = fi; j < r->p->nfetches; j++)
                if (r->p->fetch_slot[j] == r->p->fetch_slot[fi] && !r->fetched[j]) r->fetched[j] = vg_tensor_ref(outs[k]);
        }
    }
    switch (c->kind) {
    case CF_ENTER: {
        cf_frame *child = child_frame(r, f, iter, c);
        if (!child) return;
        if (c->is_constant) {
            if (!vg__grow((void **)&child->invs, &child->invs_cap, child->ninvs + 1, sizeof(cf_val))) {
                r->oom = true;
                return;
            }
            child->invs[child->ninvs++] = (cf_val){t->node, t->dead ? NULL : vg_tensor_ref(outs[0]), t->dead};
            for (int64_t k = child->oldest; k <= child->iteration_count; k++)
                activate(r, t->node, t->dead, outs, false, child, k);
        } else {
            activate(r, t->node, t->dead, outs, true, child, 0);
        }
        child->num_pending_inputs--;
        cf_iter *cit = get_iter(child, 0);
        if (child->num_pending_inputs == 0 && cit && cit->outstanding_ops == 0 && cit->outstanding_frames == 0)
            cleanup(r, child, 0);
        break;
    }
    case CF_EXIT: {
        /* Each Exit of the frame instance is remembered once (entry 2 * node + live); at
         * the end of the frame the ones that never fired live reach the parent dead (a
         * loop on an untaken branch). TF remembers a dead Exit when it runs in the newest
         * iteration, which with concurrent nodes can also be a non-final iteration, whose
         * deadness would then reach a consumer that still waits on other inputs. */
        int k = 0;
        while (k < f->ndead_exits && f->dead_exits[k] / 2 != t->node) k++;
        if (k == f->ndead_exits) {
            if (!vg__grow((void **)&f->dead_exits, &f->dead_exits_cap, f->ndead_exits + 1, sizeof(int))) {
                r->oom = true;
                return;
            }
            f->dead_exits[f->ndead_exits++] = 2 * t->node;
        }
        if (!t->dead) {
            f->dead_exits[k] |= 1;
            activate(r, t->node, false, outs, true, f->parent, f->parent_iter);
        }
        break;
    }
    case CF_NEXT:
        if (t->dead) break;
        if (iter == f->iteration_count && f->num_outstanding >= f->max_parallel) {
            if (!vg__grow((void **)&f->deferred, &f->deferred_cap, f->ndeferred + 1, sizeof(cf_val))) {
                r->oom = true;
                return;
            }
            f->deferred[f->ndeferred++] = (cf_val){t->node, vg_tensor_ref(outs[0]), false};
        } else {
            if (iter == f->iteration_count) increment_iteration(r, f);
            activate(r, t->node, false, outs, true, f, iter + 1);
        }
        break;
    default:
        activate(r, t->node, t->dead, outs, true, f, iter);
        break;
    }
    decrement_outstanding(r, f, iter);
}

static int64_t wall_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Runs the node of task t (not dead): fills outs (NULL = dead output). */
static vg_code run_node(cf_run *r, const cf_task *t, cf_iter *it, vg_tensor **outs, vg_status *st) {
    vg__run_state *rs = r->rs;
    vg__node *n = &r->p->nodes[t->node];
    const cf_node *c = &r->cf->nodes[t->node];
    vg_tensor **in = it->in + c->in_base;
    switch (c->kind) {
    case CF_SWITCH: {
        vg_tensor *pred = in[1];
        if (!pred || vg_tensor_dtype(pred) != VG_BOOL || vg_tensor_ndims(pred) != 0)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "The second input must be a scalar bool, but it has shape %s",
                                 pred ? (vg_tensor_ndims(pred) ? "non-scalar" : "[] of another dtype") : "none");
        bool b = *(const bool *)vg_tensor_data(pred);
        outs[b ? 1 : 0] = in[0];
        in[0] = NULL;
        return VG_OK;
    }
    case CF_MERGE: {
        int k = 0;
        while (k < n->ninputs && !in[k]) k++;
        if (k == n->ninputs) return vg_status_set(st, VG_INTERNAL, "Merge ran without a live input");
        outs[0] = in[k];
        in[k] = NULL;
        if (n->noutputs > 1 && c->need_index) {
            outs[1] = vg_tensor_new(VG_INT32, NULL, 0, st);
            if (!outs[1]) return st->code;
            *(int32_t *)vg_tensor_data(outs[1]) = k;
        }
        return VG_OK;
    }
    case CF_ENTER:
    case CF_EXIT:
    case CF_NEXT:
    case CF_LOOPCOND:
        if (n->ninputs < 1 || !in[0]) return vg_status_set(st, VG_INTERNAL, "%s without input", n->def->type);
        if (c->kind == CF_LOOPCOND && (vg_tensor_dtype(in[0]) != VG_BOOL || vg_tensor_ndims(in[0]) != 0))
            return vg_status_set(st, VG_INVALID_ARGUMENT, "LoopCond's input must be a scalar bool");
        outs[0] = in[0];
        in[0] = NULL;
        return VG_OK;
    case CF_TRIGGER:
        return VG_OK;
    default: break;
    }
    if (n->is_var_read) {
        vg__var *v = n->var;
        pthread_mutex_lock(&v->mu);
        outs[0] = vg_tensor_ref(v->value);
        pthread_mutex_unlock(&v->mu);
        if (!outs[0]) return vg_status_set(st, VG_FAILED_PRECONDITION, "Attempting to use uninitialized value %s", n->op->name);
        return VG_OK;
    }
    if (n->def->flags & VG__OP_CONST) {
        outs[0] = vg_tensor_ref(n->const_value);
        return outs[0] ? VG_OK : vg_status_set(st, VG_INTERNAL, "Const without a value");
    }
    if (!n->def->kernel) return vg_status_set(st, VG_UNIMPLEMENTED, "no CPU kernel for op type %s", n->def->type);
    vg__kctx ctx = {rs, n, outs, st, it->in};
    vg_code rc = n->def->kernel(&ctx);
    if (rc == VG_OK && st->code != VG_OK) rc = st->code;
    for (int i = 0; rc == VG_OK && i < n->noutputs; i++)
        if (!outs[i]) rc = vg_status_set(st, VG_INTERNAL, "kernel %s did not produce output %d", n->def->type, i);
    return rc;
}

static void record(cf_run *r, vg__node *n, int64_t t0, int64_t t1) {
    vg_run_metadata *md = r->rs->md;
    pthread_mutex_lock(&md->mu);
    if (vg__grow((void **)&md->nodes, &md->cap, md->n + 1, sizeof(vg_node_stats))) {
        vg_node_stats *ns = &md->nodes[md->n++];
        ns->node_name = n->op->name;
        ns->op_type = n->def->type;
        ns->start_us = t0;
        ns->end_us = t1;
        ns->thread_id = vg__pool_thread_id();
        ns->bytes_allocated = 0;
    }
    pthread_mutex_unlock(&md->mu);
}

/* Records the run's first error and stops it. Lock held. */
static void fail(cf_run *r, const vg_status *e) {
    if (!r->stop) {
        r->stop = true;
        r->rc = e->code ? e->code : VG_INTERNAL;
        vg_status_copy(&r->err, e);
    }
}

/* Takes the next task (a helper skips blocking ops, so a queue op never parks a pool
 * thread other runs may need). False if none. Lock held. */
static bool take_task(cf_run *r, bool helper, cf_task *t) {
    if (r->qh == r->qt) return false;
    int k = r->qh;
    if (helper)
        while (k < r->qt && (r->p->nodes[r->q[k].node].def->flags & VG__OP_BLOCKING)) k++;
    if (k == r->qt) return false;
    *t = r->q[k];
    r->q[k] = r->q[r->qh++];
    r->nexpensive -= t->expensive;
    return true;
}

static void run_free(cf_run *r) {
    if (r->mt) {
        pthread_mutex_destroy(&r->mu);
        pthread_cond_destroy(&r->cv);
    }
    vg__free(r);
}

static void work(cf_run *r, bool helper);

static void helper_task(void *arg) {
    cf_run *r = arg;
    work(r, true);
    pthread_mutex_lock(&r->mu);
    r->helpers--;
    bool last = --r->refs == 0;
    pthread_mutex_unlock(&r->mu);
    if (last) run_free(r);
}

/* The worker loop of the caller (until the run ends) and of helpers (until no node is
 * ready for them). Nodes that are not control-flow ops, Consts or variable reads run
 * outside the lock when there is an inter-op pool; the rest (cheap bookkeeping) run
 * under it, inline. */
static void work(cf_run *r, bool helper) {
    vg__plan *p = r->p;
    vg__cf_plan *cf = r->cf;
    vg_tensor *outs_local[8];
    CF_LOCK(r);
    for (;;) {
        if (r->finished) break; /* a late helper: the run state may serve another run now */
        vg__run_state *rs = r->rs;
        vg_session *s = rs->s;
        if (r->stop || r->oom) {
            if (helper || r->inflight == 0) break;
            r->caller_waits = true;
            pthread_cond_wait(&r->cv, &r->mu);
            r->caller_waits = false;
            continue;
        }
        cf_task t;
        if (!take_task(r, helper, &t)) {
            if (helper || r->inflight == 0) break;
            r->caller_waits = true;
            pthread_cond_wait(&r->cv, &r->mu);
            r->caller_waits = false;
            continue;
        }
        vg__node *n = &p->nodes[t.node];
        const cf_node *c = &cf->nodes[t.node];
        vg_status e;
        vg_status_clear(&e);
        if ((++r->tick & 15) == 0 || c->kind == CF_NEXT) {
            if (atomic_load_explicit(&s->closing, memory_order_relaxed)) {
                vg_status_set(&e, VG_CANCELLED, "Session was closed while the run was executing (at '%s')",
                              n->op->name);
                fail(r, &e);
                continue;
            }
            if (rs->deadline && vg__now_ns() > rs->deadline) {
                vg_status_set(&e, VG_DEADLINE_EXCEEDED, "Timed out: the run exceeded its timeout (at '%s')",
                              n->op->name);
                fail(r, &e);
                continue;
            }
        }
        cf_iter *it = get_iter(t.f, t.iter);
        if (!it) {
            vg_status_set(&e, VG_INTERNAL, "control flow: iteration %lld of '%s' is gone", (long long)t.iter,
                          n->op->name);
            fail(r, &e);
            continue;
        }
        vg_tensor **outs = outs_local;
        if (n->noutputs > 8 && !(outs = vg__calloc((size_t)n->noutputs, sizeof(vg_tensor *)))) {
            r->oom = true;
            continue;
        }
        for (int i = 0; i < n->noutputs; i++) outs[i] = NULL;
        if (!t.dead) {
            vg_code rc;
            int64_t t0 = rs->trace ? wall_us() : 0;
            if (r->mt && c->kind == CF_NONE && !n->is_var_read && !(n->def->flags & VG__OP_CONST)) {
                /* more expensive work ready than helpers on it: offer it to the pool */
                bool spawn = r->nexpensive > r->helpers && r->helpers < r->pool_size;
                if (spawn) {
                    r->helpers++;
                    r->refs++;
                }
                r->inflight++;
                pthread_mutex_unlock(&r->mu);
                if (spawn && !vg__pool_submit(s->inter, helper_task, r)) {
                    pthread_mutex_lock(&r->mu);
                    r->helpers--;
                    r->refs--;
                    pthread_mutex_unlock(&r->mu);
                }
                int64_t k0 = vg__now_ns();
                rc = run_node(r, &t, it, outs, &e);
                int64_t dt = vg__now_ns() - k0, old = atomic_load_explicit(&cf->cost_ns[t.node], memory_order_relaxed);
                if (dt < 1) dt = 1;
                atomic_store_explicit(&cf->cost_ns[t.node], old ? (3 * old + dt) / 4 : dt, memory_order_relaxed);
                pthread_mutex_lock(&r->mu);
                r->inflight--;
            } else {
                rc = run_node(r, &t, it, outs, &e);
            }
            if (rs->trace) record(r, n, t0, wall_us());
            if (rc != VG_OK) {
                for (int i = 0; i < n->noutputs; i++) vg_tensor_free(outs[i]);
                if (outs != outs_local) vg__free(outs);
                size_t len = strlen(e.msg);
                snprintf(e.msg + len, sizeof e.msg - len, "\n\t [[node %s (%s)]]", n->op->name, n->def->type);
                fail(r, &e);
                if (r->caller_waits) pthread_cond_signal(&r->cv);
                continue;
            }
        }
        /* the node's inputs are consumed */
        for (int k = 0; k < n->ninputs; k++) {
            vg_tensor **slot = &it->in[c->in_base + k];
            if (*slot) { vg_tensor_free(*slot); *slot = NULL; }
        }
        propagate(r, &t, outs);
        for (int i = 0; i < n->noutputs; i++) vg_tensor_free(outs[i]);
        if (outs != outs_local) vg__free(outs);
        if (r->caller_waits && (r->qh < r->qt || r->inflight == 0)) pthread_cond_signal(&r->cv);
    }
    CF_UNLOCK(r);
}

vg_code vg__cf_run(vg__run_state *rs, vg_tensor *const *feed_values, vg_tensor **out, vg_status *st) {
    vg__plan *p = rs->p;
    vg__cf_plan *cf = p->cf;
    cf_run *rp = vg__calloc(1, sizeof *rp);
    if (!rp) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory starting a run");
    cf_run *r = rp;
    r->rs = rs;
    r->p = p;
    r->cf = cf;
    r->refs = 1;
    r->pool_size = rs->s->inter_helpers;
    if (r->pool_size > 0) {
        r->mt = true;
        pthread_mutex_init(&r->mu, NULL);
        pthread_cond_init(&r->cv, NULL);
    }
    vg_status err;
    vg_status_clear(&err);
    vg_status_clear(&r->err);
    vg_code rc = VG_OK;
    for (int i = 0; i < p->nfetches; i++) out[i] = NULL;
    r->fetched = vg__calloc((size_t)p->nfetches + 1, sizeof(vg_tensor *));
    r->free_iters = vg__calloc((size_t)cf->nframes, sizeof(cf_iter *));
    r->root = frame_new(r, 0, NULL, 0, 1);
    if (!r->fetched || !r->root) {
        rc = vg_status_set(&err, VG_RESOURCE_EXHAUSTED, "out of memory starting a run");
        goto done;
    }
    r->root->num_pending_inputs = 0;
    {
        cf_iter *it0 = r->root->ring[0];
        for (int i = 0; i < cf->nroots; i++) {
            it0->flags[cf->nodes[cf->roots[i]].lidx] |= 2;
            it0->outstanding_ops++;
            push_task(r, cf->roots[i], r->root, 0, false);
        }
        /* fed values: delivered along the feed's edges */
        it0->outstanding_ops++; /* held while feeding */
        for (int fi = 0; fi < p->nfeeds; fi++) {
            for (int k = 0; k < cf->nfeed_out[fi]; k++) {
                cf_edge e = cf->feed_out[fi][k];
                const cf_node *d = &cf->nodes[e.dst];
                int l = d->lidx;
                vg_tensor **slot = &it0->in[d->in_base + e.dst_in];
                if (d->kind == CF_MERGE) {
                    if (it0->flags[l] & 3) continue;
                    it0->flags[l] |= 1;
                    *slot = vg_tensor_ref(feed_values[fi]);
                    if (it0->pending[l] == 0) {
                        it0->flags[l] |= 2;
                        it0->outstanding_ops++;
                        push_task(r, e.dst, r->root, 0, false);
                    }
                    continue;
                }
                vg_tensor_free(*slot);
                *slot = vg_tensor_ref(feed_values[fi]);
                if (--it0->pending[l] == 0) {
                    it0->flags[l] |= 2;
                    it0->outstanding_ops++;
                    push_task(r, e.dst, r->root, 0, it0->dead[l] > 0);
                }
            }
            for (int j = 0; j < p->nfetches; j++)
                if (cf->fetch_feed[j] == fi && !r->fetched[j]) r->fetched[j] = vg_tensor_ref(feed_values[fi]);
        }
        it0->outstanding_ops--;
    }
    work(r, false);
    CF_LOCK(r);
    r->finished = true; /* helpers still queued only drop their reference from now on */
    CF_UNLOCK(r);
    if (r->stop) {
        rc = r->rc;
        vg_status_copy(&err, &r->err);
    }
    if (rc == VG_OK && r->oom) rc = vg_status_set(&err, VG_RESOURCE_EXHAUSTED, "out of memory running a control-flow plan");
    if (rc == VG_OK) {
        for (int i = 0; i < p->nfetches; i++) {
            if (r->fetched[i]) continue;
            const vg_op *fop = NULL;
            for (int k = 0; k < p->nnodes && !fop; k++)
                if (p->nodes[k].noutputs && p->fetch_slot[i] >= p->nodes[k].out_base &&
                    p->fetch_slot[i] < p->nodes[k].out_base + p->nodes[k].noutputs)
                    fop = p->nodes[k].op;
            rc = vg_status_set(&err, VG_INVALID_ARGUMENT,
                               "fetch %d ('%s') has no value: it is dead (on the untaken side of a cond) or was "
                               "never computed", i, fop ? fop->name : "?");
            break;
        }
    }
done:
    if (rc == VG_OK) {
        for (int i = 0; i < p->nfetches; i++) {
            out[i] = r->fetched[i];
            r->fetched[i] = NULL;
        }
    } else {
        vg_status_copy(st, &err);
    }
    for (int i = 0; r->fetched && i < p->nfetches; i++) vg_tensor_free(r->fetched[i]);
    vg__free(r->fetched);
    if (r->root) {
        for (int64_t k = r->root->oldest; k <= r->root->iteration_count; k++)
            iter_free(r, 0, r->root->ring[k & (r->root->ring_cap - 1)]);
        frame_free(r->root);
    }
    for (int i = 0; r->free_iters && i < cf->nframes; i++)
        while (r->free_iters[i]) {
            cf_iter *it = r->free_iters[i];
            r->free_iters[i] = (cf_iter *)it->in[0];
            vg__free(it);
        }
    vg__free(r->free_iters);
    vg__free(r->q);
    CF_LOCK(r);
    bool last = --r->refs == 0;
    CF_UNLOCK(r);
    if (last) run_free(r);
    return rc;
}
