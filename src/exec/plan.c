/*
 * plan.c - execution plans: what one (feeds, fetches, targets) needs, built once and
 * cached by the session (vg__plan_build), then run by executor.c.
 *
 * Building goes in two phases.
 *
 * 1. Nodes and slots. The ops that the fetches and targets need (pruning at fed
 *    tensors; a fed Placeholder's control edges are satisfied by its feed, as TF's
 *    subgraph rewrite does) become nodes, every needed output a plan-wide slot. A ref
 *    input (bit set in the op def's ref_inputs) is bound to the session's variable slot
 *    behind it (following Identity, RefIdentity, the control-flow ops and the ops that
 *    pass a ref on: Assign, Apply*). Plans without control flow are then fused
 *    (fuse.c), which rewires node inputs between slots.
 *
 * 2. Edges and frames. Every slot a node reads becomes a data edge from its producer
 *    (or from its feed), every control input a control edge, and a ref input that comes
 *    through another op a control edge from that op. Frames as TF 1.15's executor.cc
 *    (BuildControlFlowInfo): every node runs in one static frame, the root or the frame
 *    an Enter names; successors of an Enter are in its child frame, successors of an
 *    Exit in the parent. A node reached in two frames makes the plan INVALID_ARGUMENT.
 *    Each frame numbers its nodes and their inputs: a node's input i lives at
 *    in_base + i of its iteration's input array.
 *
 * Variables. A VariableV2 node outputs a reference to its slot (see exec.h); any
 * consumer that is not a pass-through op reads the variable when it runs, after all it
 * depends on, as a TF ref edge does. So that writers can update in place and a read not
 * ordered with a write is deterministic, the plan orders every root-frame reader of a
 * variable (a node that reads it, holds its buffer through an aliasing op such as
 * Reshape, or whose output of the reference is fetched) before each root-frame node
 * with that variable as a ref input, unless one already depends on the other (TF leaves
 * such pairs unordered: any order is one TF could take). If those ordering edges close
 * a cycle they are all left out.
 */
#include "exec.h"
#include "ewfuse.h"
#include <stdio.h>

/* ------------------------------------------------------------------------ */
/* phase 1 */

typedef struct builder {
    vg_session *s;
    int nops;
    int *out_off;    /* first output index of op id in the flat output space */
    int nouts;
    int *feed_of;    /* per flat output: feed index or -1 */
    bool *need_out;  /* per flat output */
    bool *run;       /* per op id */
    int *stack;
    int nstack;
} builder;

static void mark_run(builder *b, vg_op *op) {
    if (b->run[op->id]) return;
    b->run[op->id] = true;
    b->stack[b->nstack++] = op->id;
}

static void mark_output(builder *b, vg_output o) {
    int f = b->out_off[o.op->id] + o.index;
    b->need_out[f] = true;
    if (b->feed_of[f] >= 0) return;
    mark_run(b, o.op);
}

static bool is_type(const vg_op *op, const char *t) { return strcmp(op->def->type, t) == 0; }

static int kind_of(const vg_op *op) {
    const char *t = op->def->type;
    if (op->def->flags & VG__OP_VARIABLE) return VG__K_VARIABLE;
    if (op->def->flags & VG__OP_CONST) return VG__K_CONST;
    if (!strcmp(t, "Identity") || !strcmp(t, "RefIdentity")) return VG__K_IDENTITY;
    if (!strcmp(t, "Switch") || !strcmp(t, "RefSwitch")) return VG__K_SWITCH;
    if (!strcmp(t, "Merge") || !strcmp(t, "RefMerge")) return VG__K_MERGE;
    if (!strcmp(t, "Enter") || !strcmp(t, "RefEnter")) return VG__K_ENTER;
    if (!strcmp(t, "Exit") || !strcmp(t, "RefExit")) return VG__K_EXIT;
    if (!strcmp(t, "NextIteration") || !strcmp(t, "RefNextIteration")) return VG__K_NEXT;
    if (!strcmp(t, "LoopCond")) return VG__K_LOOPCOND;
    if (!strcmp(t, "ControlTrigger")) return VG__K_TRIGGER;
    return VG__K_KERNEL;
}

static bool is_cflow_kind(int k) { return k >= VG__K_SWITCH && k <= VG__K_TRIGGER; }

/* Passes its input 0 on as a ref (a TF ref output). */
static bool passes_ref(const vg_op *op) {
    int k = kind_of(op);
    return (op->def->flags & VG__OP_PASS_REF) || k == VG__K_IDENTITY || k == VG__K_ENTER || k == VG__K_EXIT ||
           k == VG__K_SWITCH || k == VG__K_NEXT;
}

/* The variable behind a ref input: follows ops that pass a ref on to a VariableV2. */
static vg__var *ref_var(vg_session *s, vg_output in) {
    vg_op *op = in.op;
    for (int guard = 0; op && guard < 1000; guard++) {
        if (op->def->flags & VG__OP_VARIABLE) return vg__session_var(s, op);
        if (!passes_ref(op) || op->ninputs < 1) return NULL;
        op = op->inputs[0].op;
    }
    return NULL;
}

/* A Placeholder whose output is fed: its control edges are satisfied by the feed. */
static bool fed_placeholder(const builder *b, const vg_op *op) {
    return (is_type(op, "Placeholder") || is_type(op, "PlaceholderV2")) && op->noutputs >= 1 &&
           b->feed_of[b->out_off[op->id]] >= 0;
}

static bool check_op(vg_session *s, const vg_op *op, const char *what, vg_status *st) {
    if (!op) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "%s is NULL", what);
        return false;
    }
    if (op->graph != s->g) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "%s '%s' is not an element of this session's graph", what, op->name);
        return false;
    }
    if (op->id >= s->nops) { /* the session was extended before the plan is built */
        vg_status_set(st, VG_INTERNAL, "%s '%s' is not known to the session", what, op->name);
        return false;
    }
    return true;
}

void vg__plan_free(vg__plan *p) {
    if (!p) return;
    vg__plan_free_states(p);
    for (int i = 0; p->nodes && i < p->nnodes; i++) {
        vg__node *n = &p->nodes[i];
        vg__free(n->in_slot);
        vg__free(n->in_var);
        vg__free(n->amp_round);
        vg__ew_prog_free(n->ew_prog);
        vg__free(n->succ);
        vg__free(n->out_fed);
        vg__free(n->out);
        vg__free(n->fetch_of);
        vg__free(n->out_needed);
    }
    vg__free(p->nodes);
    for (int i = 0; p->frames && i < p->nframes; i++) {
        vg__free(p->frames[i].name);
        vg__free(p->frames[i].nodes);
        vg__free(p->frames[i].pending0);
    }
    vg__free(p->frames);
    for (int i = 0; p->feed_out && i < p->nfeeds; i++) vg__free(p->feed_out[i]);
    vg__free(p->feed_out);
    vg__free(p->nfeed_out);
    vg__free(p->roots);
    vg__free(p->fetch_feed);
    vg__free(p->fetch_node);
    vg__free(p->fetch_next);
    vg__free(p->fetch_copy);
    vg__free(p->slot_uses);
    vg__free(p->fetch_slot);
    vg__free(p->key);
    pthread_mutex_destroy(&p->mu);
    vg__free(p);
}

static bool add_succ(vg__node *n, int *cap, int to) {
    if (!vg__grow((void **)&n->succ, cap, n->nsucc + 1, sizeof(int))) return false;
    n->succ[n->nsucc++] = to;
    return true;
}

/* Is `to` reachable from `from` along succ edges? (DFS with a scratch mark array.) */
bool vg__plan_reaches(const vg__plan *p, int from, int to, int *mark, int stamp, int *stack) {
    int n = 0;
    stack[n++] = from;
    mark[from] = stamp;
    while (n) {
        int x = stack[--n];
        if (x == to) return true;
        for (int k = 0; k < p->nodes[x].nsucc; k++) {
            int y = p->nodes[x].succ[k];
            if (mark[y] != stamp) { mark[y] = stamp; stack[n++] = y; }
        }
    }
    return false;
}

uint64_t vg__plan_key_hash(const int *key, int n) {
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (uint64_t)n;
    for (int i = 0; i < n; i++) {
        h ^= (uint32_t)key[i];
        h *= 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
    }
    return h;
}

/* ------------------------------------------------------------------------ */
/* phase 2 */

typedef struct edges_ctx {
    int *ecap;   /* per node: capacity of out */
    int *fcap;   /* per feed: capacity of feed_out */
} edges_ctx;

static bool add_edge(vg__edge **v, int *n, int *cap, vg__edge e) {
    if (!vg__grow((void **)v, cap, *n + 1, sizeof(vg__edge))) return false;
    (*v)[(*n)++] = e;
    return true;
}

static int frame_id(vg__plan *p, const char *name, int parent) {
    for (int i = 0; i < p->nframes; i++)
        if (strcmp(p->frames[i].name, name) == 0) return i;
    if (!vg__grow((void **)&p->frames, &p->frames_cap, p->nframes + 1, sizeof(vg__sframe))) return -1;
    vg__sframe *f = &p->frames[p->nframes];
    memset(f, 0, sizeof *f);
    f->name = vg__strdup(name);
    f->parent = parent;
    if (!f->name) return -1;
    return p->nframes++;
}

/* Static frames: BFS from the roots and the fed tensors' consumers. */
static vg_code assign_frames(vg__plan *p, const vg_output *feeds, const vg_output *fetches, int *queue, vg_status *st) {
    int nn = p->nnodes, qh = 0, qt = 0;
    for (int i = 0; i < nn; i++) p->nodes[i].frame = -1;
    for (int i = 0; i < p->nroots; i++) {
        p->nodes[p->roots[i]].frame = 0;
        queue[qt++] = p->roots[i];
    }
    for (int fi = 0; fi < p->nfeeds; fi++)
        for (int k = 0; k < p->nfeed_out[fi]; k++) {
            int d = p->feed_out[fi][k].dst;
            if (p->nodes[d].frame < 0) {
                p->nodes[d].frame = 0;
                queue[qt++] = d;
            }
        }
    while (qh < qt) {
        int i = queue[qh++];
        vg__node *c = &p->nodes[i];
        vg_op *op = c->op;
        int out_frame = c->frame;
        if (c->kind == VG__K_ENTER) {
            const char *fname = NULL;
            size_t len = 0;
            if (!vg_op_attr_string(op, "frame_name", &fname, &len) || len == 0)
                return vg_status_set(st, VG_INVALID_ARGUMENT, "Enter '%s' has no frame_name", op->name);
            char buf[512];
            snprintf(buf, sizeof buf, "%.*s", (int)len, fname);
            int fid = frame_id(p, buf, c->frame);
            if (fid < 0) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory building the execution plan");
            if (p->frames[fid].parent != c->frame)
                return vg_status_set(st, VG_INVALID_ARGUMENT,
                                     "frame '%s' is entered from two different frames (at '%s')", buf, op->name);
            c->child = fid;
            bool b = false;
            c->is_constant = vg_op_attr_bool(op, "is_constant", &b) && b;
            int64_t pi = 10;
            vg_op_attr_int(op, "parallel_iterations", &pi);
            c->parallel = pi < 1 ? 1 : (pi > (1 << 20) ? (1 << 20) : (int)pi);
            p->frames[fid].nenters++;
            if (p->frames[fid].parallel == 0 || c->parallel < p->frames[fid].parallel)
                p->frames[fid].parallel = c->parallel;
            out_frame = fid;
        } else if (c->kind == VG__K_EXIT) {
            if (c->frame == 0)
                return vg_status_set(st, VG_INVALID_ARGUMENT, "Exit '%s' is not inside a while loop frame", op->name);
            out_frame = p->frames[c->frame].parent;
        }
        for (int k = 0; k < c->nout; k++) {
            int d = c->out[k].dst;
            if (p->nodes[d].frame < 0) {
                p->nodes[d].frame = out_frame;
                queue[qt++] = d;
            } else if (p->nodes[d].frame != out_frame) {
                return vg_status_set(st, VG_INVALID_ARGUMENT,
                                     "'%s' has inputs from different frames: '%s' is in frame '%s', '%s' in frame "
                                     "'%s'",
                                     p->nodes[d].op->name, op->name, p->frames[out_frame].name, p->nodes[d].op->name,
                                     p->frames[p->nodes[d].frame].name);
            }
        }
    }
    for (int i = 0; i < nn; i++)
        if (p->nodes[i].frame < 0)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "'%s' is in a cycle that no Enter starts",
                                 p->nodes[i].op->name);
    for (int i = 0; i < p->nfetches; i++) {
        if (p->fetch_feed[i] >= 0) continue;
        vg__node *c = &p->nodes[p->fetch_node[i]];
        int of = c->kind == VG__K_EXIT ? p->frames[c->frame].parent : c->kind == VG__K_ENTER ? -1 : c->frame;
        if (of != 0)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "cannot fetch '%s:%d': it is inside the while loop frame '%s'",
                                 fetches[i].op->name, fetches[i].index, p->frames[c->frame].name);
    }
    for (int fi = 0; fi < p->nfeeds; fi++)
        for (int k = 0; k < p->nfeed_out[fi]; k++)
            if (p->nodes[p->feed_out[fi][k].dst].frame != 0)
                return vg_status_set(st, VG_INVALID_ARGUMENT,
                                     "cannot feed '%s:%d': a consumer is inside a while loop", feeds[fi].op->name,
                                     feeds[fi].index);
    return VG_OK;
}

/* Kahn's algorithm over the edges, leaving out the edges of NextIteration nodes (a
 * loop's back edges): false if a cycle remains. */
static bool acyclic(const vg__plan *p, int *indeg, int *queue) {
    int nn = p->nnodes, head = 0, tail = 0;
    for (int i = 0; i < nn; i++) indeg[i] = 0;
    for (int i = 0; i < nn; i++) {
        if (p->nodes[i].kind == VG__K_NEXT) continue;
        for (int k = 0; k < p->nodes[i].nout; k++) indeg[p->nodes[i].out[k].dst]++;
    }
    for (int i = 0; i < nn; i++)
        if (!indeg[i]) queue[tail++] = i;
    while (head < tail) {
        const vg__node *n = &p->nodes[queue[head++]];
        if (n->kind == VG__K_NEXT) continue;
        for (int k = 0; k < n->nout; k++)
            if (--indeg[n->out[k].dst] == 0) queue[tail++] = n->out[k].dst;
    }
    return tail == nn;
}

#define VAR_MANY ((vg__var *)(uintptr_t)2) /* a slot that may carry references of several variables */

static vg__var *join_var(vg__var *a, vg__var *b) {
    if (!a) return b;
    if (!b || a == b) return a;
    return VAR_MANY;
}

/* Ops whose output aliases their input's buffer: a consumer of theirs holds a
 * variable's buffer when the input was its value. */
static bool aliases_input(const vg__node *n) {
    const char *t = n->def->type;
    return (n->def == n->op->def) &&
           (!strcmp(t, "Snapshot") || !strcmp(t, "Reshape") || !strcmp(t, "StopGradient") ||
            !strcmp(t, "ExpandDims") || !strcmp(t, "Squeeze") || !strcmp(t, "Identity"));
}

/* Per plan-wide slot: the variable whose reference it may carry (ref_of) and the
 * variable whose buffer it may hold (buf_of). Fixpoint over the nodes in id order (one
 * pass but for loop back edges). */
static void var_flow(vg__plan *p, vg__var **ref_of, vg__var **buf_of) {
    for (int pass = 0; pass < 8; pass++) {
        bool changed = false;
        for (int i = 0; i < p->nnodes; i++) {
            vg__node *n = &p->nodes[i];
            if (n->noutputs < 1 || n->out_base < 0) continue;
            vg__var *r = NULL, *b = NULL;
            int in0 = n->ninputs > 0 ? n->in_slot[0] : -1;
            switch (n->kind) {
            case VG__K_VARIABLE: r = n->var; break;
            case VG__K_IDENTITY:
            case VG__K_ENTER:
            case VG__K_EXIT:
            case VG__K_NEXT:
            case VG__K_SWITCH:
                if (in0 >= 0) r = ref_of[in0], b = buf_of[in0];
                break;
            case VG__K_MERGE:
                for (int k = 0; k < n->ninputs; k++)
                    if (n->in_slot[k] >= 0) r = join_var(r, ref_of[n->in_slot[k]]), b = join_var(b, buf_of[n->in_slot[k]]);
                break;
            default:
                if (aliases_input(n) && in0 >= 0) b = join_var(ref_of[in0], buf_of[in0]);
                break;
            }
            int nset = n->kind == VG__K_SWITCH ? 2 : 1;
            for (int k = 0; k < nset && k < n->noutputs; k++) {
                if (n->out_fed && n->out_fed[k]) continue;
                int s = n->out_base + k;
                vg__var *nr = join_var(ref_of[s], r), *nb = join_var(buf_of[s], b);
                if (nr != ref_of[s] || nb != buf_of[s]) changed = true;
                ref_of[s] = nr;
                buf_of[s] = nb;
            }
        }
        if (!changed) break;
    }
}

/* Does node r read variable v (see the file comment)? */
static bool reads_var(const vg__plan *p, const vg__node *r, vg__var *v, vg__var *const *ref_of, vg__var *const *buf_of) {
    bool passes = r->kind == VG__K_IDENTITY || r->kind == VG__K_ENTER || r->kind == VG__K_EXIT ||
                  r->kind == VG__K_NEXT || r->kind == VG__K_MERGE || r->kind == VG__K_VARIABLE;
    if (!aliases_input(r)) {
        for (int j = 0; j < r->ninputs; j++) {
            int s = r->in_slot[j];
            if (s < 0) continue;
            if (buf_of[s] == v) return true;
            if (ref_of[s] == v && !passes && !(r->kind == VG__K_SWITCH && j == 0)) return true;
        }
    }
    /* a fetched reference is read when r completes */
    if (r->fetch_of)
        for (int k = 0; k < r->noutputs; k++)
            if (r->fetch_of[k] >= 0 && ref_of[r->out_base + k] == v) return true;
    return false;
}

/* Ordering edges reader -> writer among root-frame nodes (see the file comment): added
 * to succ and as control edges. Returns false on OOM; *added gets the count per node
 * (to take them out again). */
static bool add_rw_edges(vg__plan *p, int *succ_cap, int *ecap, vg__var *const *ref_of, vg__var *const *buf_of,
                         int *added) {
    int nn = p->nnodes;
    int *mark = vg__calloc((size_t)nn + 1, sizeof(int)), *stack = vg__malloc(sizeof(int) * (size_t)(nn + 1));
    bool ok = mark && stack;
    int stamp = 0;
    for (int w = 0; w < nn && ok; w++) {
        vg__node *wn = &p->nodes[w];
        if (wn->frame != 0) continue;
        for (int i = 0; i < wn->ninputs && ok; i++) {
            vg__var *v = wn->in_var[i];
            if (!v) continue;
            for (int r = 0; r < nn && ok; r++) {
                vg__node *rn = &p->nodes[r];
                if (r == w || rn->frame != 0 || !reads_var(p, rn, v, ref_of, buf_of)) continue;
                if (vg__plan_reaches(p, w, r, mark, ++stamp, stack)) continue; /* writer feeds the reader */
                if (vg__plan_reaches(p, r, w, mark, ++stamp, stack)) continue; /* already ordered */
                vg__edge e = {w, -1, -1, false};
                ok = add_succ(rn, &succ_cap[r], w) && add_edge(&rn->out, &rn->nout, &ecap[r], e);
                if (ok) {
                    wn->nctrl++;
                    added[r]++;
                }
            }
        }
    }
    vg__free(mark);
    vg__free(stack);
    return ok;
}

/* ------------------------------------------------------------------------ */

vg_code vg__plan_build(vg_session *s, const vg_output *feeds, int nfeeds, const vg_output *fetches, int nfetches,
                       vg_op *const *targets, int ntargets, vg__plan **out, vg_status *st) {
    vg_graph *g = s->g;
    builder b = {.s = s, .nops = s->nops};
    vg__plan *p = NULL;
    int *op_node = NULL, *slot_of = NULL, *succ_cap = NULL, *scratch = NULL, *scratch2 = NULL, *added = NULL;
    int *slot_prod = NULL, *slot_feed = NULL, *ecap = NULL, *fcap = NULL;
    vg__var **ref_of = NULL, **buf_of = NULL;
    bool has_cf = false;
    vg_code rc = VG_OK;
    *out = NULL;
    for (int i = 0; i < nfeeds; i++)
        if (!check_op(s, feeds[i].op, "feed", st)) return st ? st->code : VG_INVALID_ARGUMENT;
    for (int i = 0; i < nfetches; i++)
        if (!check_op(s, fetches[i].op, "fetch", st)) return st ? st->code : VG_INVALID_ARGUMENT;
    for (int i = 0; i < ntargets; i++)
        if (!check_op(s, targets[i], "target", st)) return st ? st->code : VG_INVALID_ARGUMENT;

    b.out_off = vg__malloc(sizeof(int) * (size_t)(b.nops + 1));
    b.run = vg__calloc((size_t)b.nops + 1, sizeof(bool));
    b.stack = vg__malloc(sizeof(int) * (size_t)(b.nops + 1));
    op_node = vg__malloc(sizeof(int) * (size_t)(b.nops + 1));
    if (!b.out_off || !b.run || !b.stack || !op_node) goto oom;
    for (int i = 0; i < b.nops; i++) {
        b.out_off[i] = b.nouts;
        b.nouts += g->ops[i]->noutputs;
    }
    b.feed_of = vg__malloc(sizeof(int) * (size_t)(b.nouts + 1));
    b.need_out = vg__calloc((size_t)b.nouts + 1, sizeof(bool));
    slot_of = vg__malloc(sizeof(int) * (size_t)(b.nouts + 1));
    if (!b.feed_of || !b.need_out || !slot_of) goto oom;
    for (int i = 0; i < b.nouts; i++) b.feed_of[i] = -1, slot_of[i] = -1;
    for (int i = 0; i < nfeeds; i++) {
        if (feeds[i].index < 0 || feeds[i].index >= feeds[i].op->noutputs) {
            rc = vg_status_set(st, VG_INVALID_ARGUMENT, "feed '%s:%d' does not exist", feeds[i].op->name, feeds[i].index);
            goto fail;
        }
        int f = b.out_off[feeds[i].op->id] + feeds[i].index;
        if (b.feed_of[f] >= 0) {
            rc = vg_status_set(st, VG_INVALID_ARGUMENT, "tensor '%s:%d' is fed twice", feeds[i].op->name, feeds[i].index);
            goto fail;
        }
        b.feed_of[f] = i;
    }
    for (int i = 0; i < nfetches; i++) {
        if (fetches[i].index < 0 || fetches[i].index >= fetches[i].op->noutputs) {
            rc = vg_status_set(st, VG_INVALID_ARGUMENT, "fetch '%s:%d' does not exist", fetches[i].op->name,
                               fetches[i].index);
            goto fail;
        }
        mark_output(&b, fetches[i]);
    }
    for (int i = 0; i < ntargets; i++)
        if (!fed_placeholder(&b, targets[i])) mark_run(&b, targets[i]);
    while (b.nstack) {
        vg_op *op = g->ops[b.stack[--b.nstack]];
        for (int i = 0; i < op->ninputs; i++) {
            vg_output in = op->inputs[i];
            bool is_ref = i < 32 && ((op->def->ref_inputs >> i) & 1);
            if (is_ref && (in.op->def->flags & VG__OP_VARIABLE)) continue;
            mark_output(&b, in);
        }
        for (int i = 0; i < op->ncontrol; i++)
            if (!fed_placeholder(&b, op->control[i])) mark_run(&b, op->control[i]);
    }

    p = vg__calloc(1, sizeof *p);
    if (!p) goto oom;
    pthread_mutex_init(&p->mu, NULL);
    p->nfeeds = nfeeds;
    p->nfetches = nfetches;
    p->ntargets = ntargets;
    for (int i = 0; i < b.nops; i++) {
        op_node[i] = -1;
        if (b.run[i]) op_node[i] = p->nnodes++;
    }
    p->nodes = vg__calloc((size_t)p->nnodes + 1, sizeof(vg__node));
    succ_cap = vg__calloc((size_t)p->nnodes + 1, sizeof(int));
    if (!p->nodes || !succ_cap) goto oom;
    /* slots: every output of a run op, and every needed fed output */
    for (int i = 0; i < b.nops; i++) {
        vg_op *op = g->ops[i];
        for (int k = 0; k < op->noutputs; k++) {
            int f = b.out_off[i] + k;
            if (b.run[i] || (b.need_out[f] && b.feed_of[f] >= 0)) slot_of[f] = p->nslots++;
        }
    }
    p->slot_uses = vg__calloc((size_t)p->nslots + 1, sizeof(int));
    p->fetch_slot = vg__malloc(sizeof(int) * (size_t)(nfetches + 1));
    if (!p->slot_uses || !p->fetch_slot) goto oom;
    for (int i = 0; i < nfetches; i++) {
        p->fetch_slot[i] = slot_of[b.out_off[fetches[i].op->id] + fetches[i].index];
        p->slot_uses[p->fetch_slot[i]]++;
    }
    /* nodes */
    for (int i = 0; i < b.nops; i++) {
        if (op_node[i] < 0) continue;
        vg_op *op = g->ops[i];
        vg__node *n = &p->nodes[op_node[i]];
        n->op = op;
        n->def = op->def;
        n->kind = kind_of(op);
        has_cf |= is_cflow_kind(n->kind);
        n->ninputs = op->ninputs;
        n->noutputs = op->noutputs;
        n->blocking = (op->def->flags & VG__OP_BLOCKING) != 0;
        n->collective = (op->def->flags & VG__OP_COLLECTIVE) != 0;
        n->out_base = op->noutputs ? slot_of[b.out_off[i]] : -1;
        n->in_slot = vg__malloc(sizeof(int) * (size_t)(op->ninputs + 1));
        n->in_var = vg__calloc((size_t)op->ninputs + 1, sizeof(vg__var *));
        if (!n->in_slot || !n->in_var) goto oom;
        if (n->kind == VG__K_VARIABLE && !(n->var = vg__session_var(s, op))) {
            rc = vg_status_set(st, VG_INTERNAL, "variable '%s' has no slot in the session", op->name);
            goto fail;
        }
        if (n->kind == VG__K_CONST) {
            vg__attr *a = vg__op_find_attr(op, "value");
            if (a && a->type == VG_ATTR_TENSOR) n->const_value = a->u.tensor;
        }
        for (int k = 0; k < op->noutputs; k++) {
            if (b.feed_of[b.out_off[i] + k] < 0) continue;
            if (!n->out_fed && !(n->out_fed = vg__calloc((size_t)op->noutputs, sizeof(bool)))) goto oom;
            n->out_fed[k] = true;
        }
        for (int k = 0; k < op->ninputs; k++) {
            vg_output in = op->inputs[k];
            bool is_ref = k < 32 && ((op->def->ref_inputs >> k) & 1);
            n->in_slot[k] = -1;
            if (is_ref) {
                n->in_var[k] = ref_var(s, in);
                if (!n->in_var[k]) {
                    rc = vg_status_set(st, VG_INVALID_ARGUMENT, "input %d of '%s' is not a variable", k, op->name);
                    goto fail;
                }
                if (in.op->def->flags & VG__OP_VARIABLE) continue;
            }
            int f = b.out_off[in.op->id] + in.index;
            if (!is_ref) {
                n->in_slot[k] = slot_of[f];
                p->slot_uses[slot_of[f]]++;
            }
            if (b.feed_of[f] < 0 && op_node[in.op->id] >= 0 &&
                !add_succ(&p->nodes[op_node[in.op->id]], &succ_cap[op_node[in.op->id]], op_node[i]))
                goto oom;
        }
        for (int k = 0; k < op->ncontrol; k++) {
            int src = op_node[op->control[k]->id];
            if (src >= 0 && !add_succ(&p->nodes[src], &succ_cap[src], op_node[i])) goto oom;
        }
    }
    if (!has_cf && vg__amp_session_on(s) && !vg__amp_paint(p)) goto oom; /* amp.c; painted nodes are not fused */
    if (!has_cf && (rc = vg__plan_fuse(p, succ_cap, st)) != VG_OK) goto fail; /* fuse.c */

    /* ---- phase 2: edges ---- */
    {
        int nn = p->nnodes;
        p->loops = has_cf;
        /* (after fusion, which may add slots) */
        slot_feed = vg__malloc(sizeof(int) * (size_t)(p->nslots + 1));
        if (!slot_feed) goto oom;
        for (int i = 0; i < p->nslots; i++) slot_feed[i] = -1;
        for (int i = 0; i < nfeeds; i++) {
            int sl = slot_of[b.out_off[feeds[i].op->id] + feeds[i].index];
            if (sl >= 0) slot_feed[sl] = i;
        }
        slot_prod = vg__malloc(sizeof(int) * 2 * (size_t)(p->nslots + 1));
        ecap = vg__calloc((size_t)nn + 1, sizeof(int));
        fcap = vg__calloc((size_t)nfeeds + 1, sizeof(int));
        p->feed_out = vg__calloc((size_t)nfeeds + 1, sizeof(vg__edge *));
        p->nfeed_out = vg__calloc((size_t)nfeeds + 1, sizeof(int));
        p->roots = vg__malloc(sizeof(int) * (size_t)(nn + 1));
        p->fetch_feed = vg__malloc(sizeof(int) * (size_t)(nfetches + 1));
        p->fetch_node = vg__malloc(sizeof(int) * (size_t)(nfetches + 1));
        p->fetch_next = vg__malloc(sizeof(int) * (size_t)(nfetches + 1));
        p->fetch_copy = vg__calloc((size_t)nfetches + 1, sizeof(bool));
        scratch = vg__malloc(sizeof(int) * (size_t)(nn + 1));
        scratch2 = vg__malloc(sizeof(int) * (size_t)(nn + 1));
        added = vg__calloc((size_t)nn + 1, sizeof(int));
        ref_of = vg__calloc((size_t)p->nslots + 1, sizeof(vg__var *));
        buf_of = vg__calloc((size_t)p->nslots + 1, sizeof(vg__var *));
        if (!slot_prod || !ecap || !fcap || !p->feed_out || !p->nfeed_out || !p->roots || !p->fetch_feed ||
            !p->fetch_node || !p->fetch_next || !p->fetch_copy || !scratch || !scratch2 || !added || !ref_of || !buf_of)
            goto oom;
        for (int sl = 0; sl < p->nslots; sl++) slot_prod[2 * sl] = -1;
        for (int i = 0; i < nn; i++) {
            vg__node *n = &p->nodes[i];
            for (int k = 0; k < n->noutputs; k++)
                if (n->out_base >= 0 && !(n->out_fed && n->out_fed[k])) {
                    slot_prod[2 * (n->out_base + k)] = i;
                    slot_prod[2 * (n->out_base + k) + 1] = k;
                }
        }
        for (int i = 0; i < nn; i++) {
            vg__node *n = &p->nodes[i];
            vg_op *op = n->op;
            for (int k = 0; k < n->ninputs; k++) {
                int sl = n->in_slot[k];
                if (sl < 0) continue;
                n->ndata++;
                if (slot_feed[sl] >= 0) {
                    int fi = slot_feed[sl];
                    vg__edge e = {i, 0, k, false};
                    if (!add_edge(&p->feed_out[fi], &p->nfeed_out[fi], &fcap[fi], e)) goto oom;
                } else if (slot_prod[2 * sl] >= 0) {
                    int src = slot_prod[2 * sl];
                    vg__edge e = {i, slot_prod[2 * sl + 1], k, false};
                    if (!add_edge(&p->nodes[src].out, &p->nodes[src].nout, &ecap[src], e)) goto oom;
                } else {
                    rc = vg_status_set(st, VG_INTERNAL, "input %d of '%s' has no producer in the plan", k, op->name);
                    goto fail;
                }
            }
            /* a ref input that comes through another op: wait for that op */
            if (n->def == op->def)
                for (int k = 0; k < op->ninputs && k < n->ninputs; k++) {
                    if (!n->in_var[k] || (op->inputs[k].op->def->flags & VG__OP_VARIABLE)) continue;
                    int src = op_node[op->inputs[k].op->id];
                    if (src < 0) continue;
                    vg__edge e = {i, -1, -1, false};
                    n->nctrl++;
                    if (!add_edge(&p->nodes[src].out, &p->nodes[src].nout, &ecap[src], e)) goto oom;
                }
            for (int k = 0; k < op->ncontrol; k++) {
                int src = op_node[op->control[k]->id];
                if (src < 0) continue;
                vg__edge e = {i, -1, -1, false};
                n->nctrl++;
                if (!add_edge(&p->nodes[src].out, &p->nodes[src].nout, &ecap[src], e)) goto oom;
            }
        }
        /* fetches */
        for (int i = 0; i < nfetches; i++) {
            int sl = p->fetch_slot[i];
            p->fetch_feed[i] = slot_feed[sl];
            p->fetch_node[i] = -1;
            if (slot_feed[sl] >= 0) continue;
            int src = slot_prod[2 * sl], k = slot_prod[2 * sl + 1];
            if (src < 0) {
                rc = vg_status_set(st, VG_INTERNAL, "fetch %d has no producer in the plan", i);
                goto fail;
            }
            vg__node *c = &p->nodes[src];
            p->fetch_node[i] = src;
            p->fetch_next[i] = -1;
            for (int j = i - 1; j >= 0; j--) /* chain the fetches of one output */
                if (p->fetch_node[j] == src && p->fetch_slot[j] == sl) {
                    int last = j;
                    while (p->fetch_next[last] >= 0) last = p->fetch_next[last];
                    p->fetch_next[last] = i;
                    break;
                }
            /* a Const's value stays with the graph, a variable's with the session: the
             * caller gets a copy (vg_session_run copies anything else still shared) */
            p->fetch_copy[i] = c->kind == VG__K_CONST;
            if (!c->fetch_of) {
                if (!(c->fetch_of = vg__malloc(sizeof(int) * (size_t)(c->noutputs + 1)))) goto oom;
                for (int j = 0; j < c->noutputs; j++) c->fetch_of[j] = -1;
            }
            if (c->fetch_of[k] < 0) c->fetch_of[k] = i;
            if (k == 1) c->need_index = true;
        }
        /* roots: nodes without an edge from another node (some wait for feeds) */
        for (int i = 0; i < nn; i++) scratch[i] = 0;
        for (int i = 0; i < nn; i++)
            for (int k = 0; k < p->nodes[i].nout; k++) scratch[p->nodes[i].out[k].dst]++;
        for (int i = 0; i < nn; i++)
            if (scratch[i] == 0) p->roots[p->nroots++] = i;
        if (frame_id(p, "", -1) != 0) goto oom;
        if (has_cf) {
            if ((rc = assign_frames(p, feeds, fetches, scratch, st)) != VG_OK) goto fail;
        } else {
            for (int i = 0; i < nn; i++) p->nodes[i].frame = 0;
        }
        /* variables: which inputs may carry references, and the ordering edges */
        var_flow(p, ref_of, buf_of);
        for (int i = 0; i < nn; i++) {
            vg__node *n = &p->nodes[i];
            int from = 0, to = n->ninputs;
            if (n->kind == VG__K_SWITCH) from = 1, to = n->ninputs < 2 ? n->ninputs : 2; /* the predicate */
            else if (n->kind != VG__K_KERNEL && n->kind != VG__K_LOOPCOND) to = 0;
            for (int k = from; k < to; k++)
                if (n->in_slot[k] >= 0 && ref_of[n->in_slot[k]]) n->may_deref = true;
        }
        if (!add_rw_edges(p, succ_cap, ecap, ref_of, buf_of, added)) goto oom;
        if (!acyclic(p, scratch, scratch2)) {
            for (int i = 0; i < nn; i++) { /* the ordering edges were appended last */
                vg__node *n = &p->nodes[i];
                for (int k = n->nout - added[i]; k < n->nout; k++) p->nodes[n->out[k].dst].nctrl--;
                n->nout -= added[i];
            }
            if (!acyclic(p, scratch, scratch2)) {
                rc = vg_status_set(st, VG_INVALID_ARGUMENT, "the graph has a cycle among the ops to run");
                goto fail;
            }
        }
        /* per output: needed; the last data edge of each output moves its reference */
        for (int i = 0; i < nn; i++) {
            vg__node *c = &p->nodes[i];
            for (int k = 0; k < c->nout; k++) {
                int so = c->out[k].src_out;
                if (so == 1 && c->kind == VG__K_MERGE) c->need_index = true;
                bool later = false;
                for (int j = k + 1; j < c->nout && !later; j++) later = c->out[j].src_out == so;
                c->out[k].last = so >= 0 && !later;
                if (so >= 0) {
                    if (!c->out_needed && !(c->out_needed = vg__calloc((size_t)c->noutputs + 1, sizeof(bool))))
                        goto oom;
                    c->out_needed[so] = true;
                }
            }
            for (int k = 0; c->fetch_of && k < c->noutputs; k++) {
                if (c->fetch_of[k] < 0) continue;
                if (!c->out_needed && !(c->out_needed = vg__calloc((size_t)c->noutputs + 1, sizeof(bool)))) goto oom;
                c->out_needed[k] = true;
            }
            p->collectives |= c->collective;
            for (int k = 0; k < c->nout && !c->feeds_collective; k++)
                c->feeds_collective = p->nodes[c->out[k].dst].collective;
        }
        /* local numbering */
        for (int i = 0; i < nn; i++) {
            vg__node *c = &p->nodes[i];
            vg__sframe *f = &p->frames[c->frame];
            c->lidx = f->nnodes++;
            c->in_base = f->ninputs;
            f->ninputs += c->ninputs;
        }
        for (int fi = 0; fi < p->nframes; fi++) {
            vg__sframe *f = &p->frames[fi];
            f->nodes = vg__malloc(sizeof(int) * (size_t)(f->nnodes + 1));
            f->pending0 = vg__malloc(sizeof(int) * (size_t)(f->nnodes + 1));
            if (!f->nodes || !f->pending0) goto oom;
        }
        for (int i = 0; i < nn; i++) {
            vg__node *c = &p->nodes[i];
            vg__sframe *f = &p->frames[c->frame];
            f->nodes[c->lidx] = i;
            f->pending0[c->lidx] = c->kind == VG__K_MERGE ? c->nctrl : c->ndata + c->nctrl;
            for (int k = 0; k < c->ninputs; k++)
                if (c->in_slot[k] >= 0) c->in_slot[k] = c->in_base + k;
        }
        /* Parallel only pays if two nodes can ever be ready together: two roots, a node
         * with two or more successors, or loops (iterations may overlap). */
        if (s->inter_helpers > 0) {
            int roots = 0;
            p->parallel = has_cf;
            for (int i = 0; i < nn; i++) scratch[i] = 0; /* predecessors among the nodes */
            for (int i = 0; i < nn; i++)
                for (int k = 0; k < p->nodes[i].nout; k++) scratch[p->nodes[i].out[k].dst]++;
            for (int i = 0; i < nn && !p->parallel; i++) {
                /* Consts and variable references are too cheap to be worth a hand-off */
                if (p->nodes[i].kind == VG__K_CONST || p->nodes[i].kind == VG__K_VARIABLE) continue;
                roots += scratch[i] == 0;
                p->parallel = p->nodes[i].nout >= 2 || roots >= 2;
            }
        }
        for (int i = 0; i < nn; i++) { /* phase 1's successor lists are not needed any more */
            vg__free(p->nodes[i].succ);
            p->nodes[i].succ = NULL;
            p->nodes[i].nsucc = 0;
        }
    }
    /* key */
    p->nkey = 2 * nfeeds + 2 * nfetches + ntargets;
    p->key = vg__malloc(sizeof(int) * (size_t)(p->nkey + 1));
    if (!p->key) goto oom;
    {
        int k = 0;
        for (int i = 0; i < nfeeds; i++) p->key[k++] = feeds[i].op->id, p->key[k++] = feeds[i].index;
        for (int i = 0; i < nfetches; i++) p->key[k++] = fetches[i].op->id, p->key[k++] = fetches[i].index;
        for (int i = 0; i < ntargets; i++) p->key[k++] = targets[i]->id;
        p->hash = vg__plan_key_hash(p->key, p->nkey);
    }
    *out = p;
    p = NULL;
    goto cleanup;
oom:
    rc = vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory building the execution plan");
fail:
    vg__plan_free(p);
cleanup:
    vg__free(b.out_off);
    vg__free(b.run);
    vg__free(b.stack);
    vg__free(b.feed_of);
    vg__free(b.need_out);
    vg__free(op_node);
    vg__free(slot_of);
    vg__free(succ_cap);
    vg__free(scratch);
    vg__free(scratch2);
    vg__free(added);
    vg__free(slot_prod);
    vg__free(slot_feed);
    vg__free(ecap);
    vg__free(fcap);
    vg__free(ref_of);
    vg__free(buf_of);
    return rc;
}
