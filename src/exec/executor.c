/*
 * executor.c - execution plans and running them.
 *
 * A plan is built once per (feeds, fetches, targets) and cached by the session. It
 * holds the ops that the fetches and targets need (pruning at fed tensors), a
 * topological order, a value slot per needed output, the number of consumers of each
 * slot (a value is released as soon as its last consumer has run) and successor
 * lists for the parallel path.
 *
 * Variables: an input marked as a ref input gets the session's variable slot instead
 * of a value. To make in-place updates safe and cheap, the plan orders every node that
 * reads a variable's value (including a fetch of the variable itself) before the nodes
 * that write that variable (unless the writer
 * is an ancestor of the reader), so a writer normally finds itself the only holder of
 * the buffer and updates it in place; if someone else still holds it (a fetch, a queue)
 * vg__var_mutable copies first (copy-on-write).
 *
 * Running: with one inter-op thread (or a plan with no parallelism) nodes run in
 * topological order on the caller's thread. Otherwise the caller runs ready nodes and
 * offers extra ready nodes to the inter-op pool; the caller keeps pulling work itself,
 * so a run never depends on a pool thread being free.
 */
#include "exec.h"
#include <stdio.h>
#include <sys/time.h>

/* ------------------------------------------------------------------------ */
/* plan building */

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

/* The variable behind a ref input: follows PASS_REF producers to a VariableV2. */
static vg__var *ref_var(vg_session *s, vg_output in) {
    vg_op *op = in.op;
    for (int guard = 0; op && guard < 1000; guard++) {
        if (op->def->flags & VG__OP_VARIABLE) return vg__session_var(s, op);
        if (!(op->def->flags & VG__OP_PASS_REF) || op->ninputs < 1) return NULL;
        op = op->inputs[0].op;
    }
    return NULL;
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
    if (op->id >= s->nops) {
        vg_status_set(st, VG_INVALID_ARGUMENT,
                      "%s '%s' was added to the graph after the session was created", what, op->name);
        return false;
    }
    return true;
}

static void state_destroy(vg__run_state *rs);

void vg__plan_free(vg__plan *p) {
    if (!p) return;
    for (int i = 0; p->nodes && i < p->nnodes; i++) {
        vg__free(p->nodes[i].in_slot);
        vg__free(p->nodes[i].in_var);
        vg__free(p->nodes[i].succ);
        vg__free(p->nodes[i].out_fed);
    }
    vg__free(p->nodes);
    vg__free((void *)p->cost_ns);
    vg__cf_free(p->cf);
    vg__free(p->order);
    vg__free(p->slot_uses);
    vg__free(p->feed_slot);
    vg__free(p->fetch_slot);
    vg__free(p->key);
    vg__run_state *c = atomic_load(&p->cached);
    if (c) state_destroy(c);
    while (p->free_states) {
        vg__run_state *rs = p->free_states;
        p->free_states = *(vg__run_state **)rs;
        state_destroy(rs);
    }
    pthread_mutex_destroy(&p->mu);
    vg__free(p);
}

static bool add_succ(vg__node *n, int *cap, int to) {
    if (!vg__grow((void **)&n->succ, cap, n->nsucc + 1, sizeof(int))) return false;
    n->succ[n->nsucc++] = to;
    return true;
}

/* Kahn's algorithm over the plan's edges; false if there is a cycle. */
static bool topo_sort(vg__plan *p, int *indeg) {
    int head = 0, tail = 0;
    for (int i = 0; i < p->nnodes; i++) indeg[i] = 0;
    for (int i = 0; i < p->nnodes; i++)
        for (int k = 0; k < p->nodes[i].nsucc; k++) indeg[p->nodes[i].succ[k]]++;
    for (int i = 0; i < p->nnodes; i++) {
        p->nodes[i].npred = indeg[i];
        if (!indeg[i]) p->order[tail++] = i;
    }
    while (head < tail) {
        vg__node *n = &p->nodes[p->order[head++]];
        for (int k = 0; k < n->nsucc; k++)
            if (--indeg[n->succ[k]] == 0) p->order[tail++] = n->succ[k];
    }
    return tail == p->nnodes;
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

static bool aliases_input(const vg_op *op) {
    const char *t = op->def->type;
    return strcmp(t, "Identity") == 0 || strcmp(t, "Snapshot") == 0 || strcmp(t, "Reshape") == 0 ||
           strcmp(t, "StopGradient") == 0 || strcmp(t, "ExpandDims") == 0 || strcmp(t, "Squeeze") == 0;
}

/* Adds reader -> writer ordering edges (see the file comment). Returns false on OOM. */
static bool add_rw_edges(vg__plan *p, int *succ_cap) {
    int nn = p->nnodes;
    vg__var **slot_var = vg__calloc((size_t)(p->nslots ? p->nslots : 1), sizeof(vg__var *));
    int *mark = vg__calloc((size_t)nn, sizeof(int)), *stack = vg__malloc(sizeof(int) * (size_t)(nn + 1));
    bool ok = slot_var && mark && stack;
    int stamp = 0;
    if (!ok) goto done;
    /* which slots alias which variable, in topological order */
    for (int k = 0; k < nn; k++) {
        vg__node *n = &p->nodes[p->order[k]];
        if (n->is_var_read) slot_var[n->out_base] = n->var;
        else if (aliases_input(n->op) && n->ninputs >= 1 && n->in_slot[0] >= 0 && n->noutputs >= 1)
            slot_var[n->out_base] = slot_var[n->in_slot[0]];
    }
    for (int w = 0; w < nn && ok; w++) {
        vg__node *wn = &p->nodes[w];
        for (int i = 0; i < wn->ninputs && ok; i++) {
            vg__var *v = wn->in_var[i];
            if (!v) continue;
            for (int r = 0; r < nn && ok; r++) {
                if (r == w) continue;
                vg__node *rn = &p->nodes[r];
                bool reads = rn->is_var_read && rn->var == v; /* a fetched variable */
                for (int j = 0; j < rn->ninputs && !reads; j++)
                    reads = rn->in_slot[j] >= 0 && slot_var[rn->in_slot[j]] == v && !aliases_input(rn->op);
                if (!reads) continue;
                if (vg__plan_reaches(p, w, r, mark, ++stamp, stack)) continue; /* writer feeds the reader */
                if (vg__plan_reaches(p, r, w, mark, ++stamp, stack)) continue; /* already ordered */
                ok = add_succ(rn, &succ_cap[r], w);
            }
        }
    }
done:
    vg__free(slot_var);
    vg__free(mark);
    vg__free(stack);
    return ok;
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

vg_code vg__plan_build(vg_session *s, const vg_output *feeds, int nfeeds, const vg_output *fetches, int nfetches,
                       vg_op *const *targets, int ntargets, vg__plan **out, vg_status *st) {
    vg_graph *g = s->g;
    builder b = {.s = s, .nops = s->nops};
    vg__plan *p = NULL;
    int *op_node = NULL, *slot_of = NULL, *succ_cap = NULL, *indeg = NULL;
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
    for (int i = 0; i < ntargets; i++) mark_run(&b, targets[i]);
    while (b.nstack) {
        vg_op *op = g->ops[b.stack[--b.nstack]];
        for (int i = 0; i < op->ninputs; i++) {
            vg_output in = op->inputs[i];
            bool is_ref = i < 32 && ((op->def->ref_inputs >> i) & 1);
            if (is_ref && (in.op->def->flags & VG__OP_VARIABLE)) continue;
            if (in.op->id >= b.nops) {
                rc = vg_status_set(st, VG_INVALID_ARGUMENT, "op '%s' was added after the session was created", in.op->name);
                goto fail;
            }
            mark_output(&b, in);
        }
        for (int i = 0; i < op->ncontrol; i++) mark_run(&b, op->control[i]);
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
    p->order = vg__malloc(sizeof(int) * (size_t)(p->nnodes + 1));
    succ_cap = vg__calloc((size_t)p->nnodes + 1, sizeof(int));
    indeg = vg__malloc(sizeof(int) * (size_t)(p->nnodes + 1));
    if (!p->nodes || !p->order || !succ_cap || !indeg) goto oom;
    /* slots: every output of a run op, and every needed fed output */
    for (int i = 0; i < b.nops; i++) {
        vg_op *op = g->ops[i];
        for (int k = 0; k < op->noutputs; k++) {
            int f = b.out_off[i] + k;
            if (b.run[i] || (b.need_out[f] && b.feed_of[f] >= 0)) slot_of[f] = p->nslots++;
        }
    }
    p->slot_uses = vg__calloc((size_t)p->nslots + 1, sizeof(int));
    p->feed_slot = vg__malloc(sizeof(int) * (size_t)(nfeeds + 1));
    p->fetch_slot = vg__malloc(sizeof(int) * (size_t)(nfetches + 1));
    if (!p->slot_uses || !p->feed_slot || !p->fetch_slot) goto oom;
    for (int i = 0; i < nfeeds; i++) p->feed_slot[i] = slot_of[b.out_off[feeds[i].op->id] + feeds[i].index];
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
        n->ninputs = op->ninputs;
        n->noutputs = op->noutputs;
        n->out_base = op->noutputs ? slot_of[b.out_off[i]] : -1;
        n->in_slot = vg__malloc(sizeof(int) * (size_t)(op->ninputs + 1));
        n->in_var = vg__calloc((size_t)op->ninputs + 1, sizeof(vg__var *));
        if (!n->in_slot || !n->in_var) goto oom;
        if (op->def->flags & VG__OP_VARIABLE) {
            n->is_var_read = true;
            n->var = vg__session_var(s, op);
        }
        if (op->def->flags & VG__OP_CONST) {
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
    for (int i = 0; i < p->nnodes && !p->cf; i++)
        if (vg__cf_is_cflow_type(p->nodes[i].def->type)) {
            rc = vg__cf_build(s, p, op_node, b.feed_of, b.out_off, feeds, fetches, st);
            if (rc != VG_OK) goto fail;
        }
    if ((rc = vg__plan_fuse(p, succ_cap, st)) != VG_OK) goto fail; /* fuse.c */
    if (p->cf) {
        /* frames and iterations: run by cflow.c in dataflow order, no static order */
    } else if (!topo_sort(p, indeg)) {
        rc = vg_status_set(st, VG_INVALID_ARGUMENT, "the graph has a cycle among the ops to run");
        goto fail;
    } else {
        /* Save the plain edge counts so we can drop the ordering edges on a cycle. */
        int *nsucc0 = vg__malloc(sizeof(int) * (size_t)(p->nnodes + 1));
        if (!nsucc0) goto oom;
        for (int i = 0; i < p->nnodes; i++) nsucc0[i] = p->nodes[i].nsucc;
        if (!add_rw_edges(p, succ_cap)) { vg__free(nsucc0); goto oom; }
        if (!topo_sort(p, indeg)) {
            for (int i = 0; i < p->nnodes; i++) p->nodes[i].nsucc = nsucc0[i];
            topo_sort(p, indeg);
        }
        vg__free(nsucc0);
    }
    /* Collectives (the distributed optimizer's allreduce buckets): the ops that produce
     * their inputs are marked so that a bucket starts as soon as its gradients exist
     * while back-propagation goes on (see take_ready). */
    for (int i = 0; i < p->nnodes; i++) {
        vg__node *n = &p->nodes[i];
        p->collectives |= (n->def->flags & VG__OP_COLLECTIVE) != 0;
        for (int k = 0; k < n->nsucc && !n->feeds_collective; k++)
            n->feeds_collective = (p->nodes[n->succ[k]].def->flags & VG__OP_COLLECTIVE) != 0;
    }
    /* Parallel only pays if two nodes can ever be ready together: two roots, or a node
     * with two or more successors. */
    if (s->inter_helpers > 0 && !p->cf) {
        int roots = 0;
        for (int i = 0; i < p->nnodes && !p->parallel; i++) {
            /* Consts and variable reads are too cheap to be worth a hand-off */
            if (p->nodes[i].def->flags & (VG__OP_CONST | VG__OP_VARIABLE)) continue;
            roots += p->nodes[i].npred == 0;
            p->parallel = p->nodes[i].nsucc >= 2 || roots >= 2;
        }
        if (p->parallel && !(p->cost_ns = vg__calloc((size_t)p->nnodes + 1, sizeof(*p->cost_ns)))) goto oom;
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
    vg__free(indeg);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* running */

static vg__run_state *state_get(vg__plan *p) {
    vg__run_state *c = atomic_exchange(&p->cached, NULL);
    if (c) return c;
    pthread_mutex_lock(&p->mu);
    vg__run_state *rs = p->free_states;
    if (rs) p->free_states = rs->next_free;
    pthread_mutex_unlock(&p->mu);
    if (rs) return rs;
    size_t ns = (size_t)p->nslots + 1, nn = (size_t)p->nnodes + 1;
    size_t sz = sizeof *rs + ns * sizeof(vg_tensor *) + ns * sizeof(atomic_int) + nn * sizeof(atomic_int) +
                nn * sizeof(int) + 64;
    rs = vg__calloc(1, sz);
    if (!rs) return NULL;
    char *q = (char *)(rs + 1);
    rs->vals = (vg_tensor **)q;
    q += ns * sizeof(vg_tensor *);
    rs->uses = (atomic_int *)q;
    q += ns * sizeof(atomic_int);
    rs->pending = (atomic_int *)q;
    q += nn * sizeof(atomic_int);
    rs->ready = (int *)q;
    pthread_mutex_init(&rs->mu, NULL);
    pthread_cond_init(&rs->cv, NULL);
    return rs;
}

static void state_destroy(vg__run_state *rs) {
    pthread_mutex_destroy(&rs->mu);
    pthread_cond_destroy(&rs->cv);
    vg__free(rs);
}

static void state_put(vg__plan *p, vg__run_state *rs) {
    vg__run_state *expect = NULL;
    if (atomic_compare_exchange_strong(&p->cached, &expect, rs)) return;
    pthread_mutex_lock(&p->mu);
    rs->next_free = p->free_states;
    p->free_states = rs;
    pthread_mutex_unlock(&p->mu);
}

static inline void release_slot(vg__run_state *rs, int slot, bool atomic) {
    int left;
    if (atomic) {
        left = atomic_fetch_sub_explicit(&rs->uses[slot], 1, memory_order_acq_rel) - 1;
    } else {
        left = atomic_load_explicit(&rs->uses[slot], memory_order_relaxed) - 1;
        atomic_store_explicit(&rs->uses[slot], left, memory_order_relaxed);
    }
    if (left == 0) {
        vg_tensor_free(rs->vals[slot]);
        rs->vals[slot] = NULL;
    }
}

static int64_t wall_us(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
}

static void record_stats(vg__run_state *rs, vg__node *n, int64_t t0, int64_t t1, int64_t bytes) {
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
    }
    pthread_mutex_unlock(&md->mu);
}

/* Runs one node: kernel (or the executor's own variable read / Const), then stores its
 * outputs in their slots and releases inputs whose last consumer it was. */
static vg_code exec_node(vg__run_state *rs, vg__node *n, bool atomic, vg_status *st) {
    vg_tensor *outs_local[8];
    vg_tensor **outs = outs_local;
    int64_t t0 = rs->trace ? wall_us() : 0;
    vg_code rc = VG_OK;
    if (n->noutputs > 8) {
        outs = vg__calloc((size_t)n->noutputs, sizeof(vg_tensor *));
        if (!outs) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory");
    } else {
        for (int i = 0; i < n->noutputs; i++) outs[i] = NULL;
    }
    if (n->is_var_read) {
        vg__var *v = n->var;
        pthread_mutex_lock(&v->mu);
        outs[0] = vg_tensor_ref(v->value);
        pthread_mutex_unlock(&v->mu);
        if (!outs[0])
            rc = vg_status_set(st, VG_FAILED_PRECONDITION, "Attempting to use uninitialized value %s", n->op->name);
    } else if (n->def->flags & VG__OP_CONST) {
        outs[0] = vg_tensor_ref(n->const_value);
        if (!outs[0]) rc = vg_status_set(st, VG_INTERNAL, "Const without a value");
    } else if (!n->def->kernel) {
        rc = vg_status_set(st, VG_UNIMPLEMENTED, "no CPU kernel for op type %s", n->def->type);
    } else {
        vg__kctx ctx = {rs, n, outs, st, rs->vals};
        rc = n->def->kernel(&ctx);
        if (rc == VG_OK && st->code != VG_OK) rc = st->code;
    }
    int64_t bytes = 0;
    for (int i = 0; i < n->noutputs; i++) {
        vg_tensor *t = outs[i];
        int slot = n->out_base + i;
        if (rc != VG_OK || (n->out_fed && n->out_fed[i])) {
            vg_tensor_free(t);
            continue;
        }
        if (!t && rs->p->slot_uses[slot] > 0) {
            rc = vg_status_set(st, VG_INTERNAL, "kernel %s did not produce output %d", n->def->type, i);
            continue;
        }
        if (t && rs->trace) bytes += (int64_t)vg_tensor_nbytes(t);
        if (rs->p->slot_uses[slot] == 0) vg_tensor_free(t);
        else rs->vals[slot] = t;
    }
    if (outs != outs_local) vg__free(outs);
    for (int i = 0; i < n->ninputs; i++)
        if (n->in_slot[i] >= 0) release_slot(rs, n->in_slot[i], atomic);
    if (rs->trace) record_stats(rs, n, t0, wall_us(), bytes);
    if (rc != VG_OK) {
        if (st->code == VG_OK) st->code = rc;
        size_t len = strlen(st->msg);
        snprintf(st->msg + len, sizeof st->msg - len, "\n\t [[node %s (%s)]]", n->op->name, n->def->type);
    }
    return rc;
}

static void fail_run(vg__run_state *rs, const vg_status *st) {
    pthread_mutex_lock(&rs->mu);
    if (!atomic_load(&rs->failed)) {
        rs->err = *st;
        atomic_store(&rs->failed, true);
    }
    pthread_mutex_unlock(&rs->mu);
}

/* Parallel path: workers (the caller and pool helpers) pull ready nodes. */
static void parallel_work(vg__run_state *rs, bool helper);

/* Drops one reference; the last one recycles the state. */
static void state_release(vg__run_state *rs) {
    if (!rs->p->parallel) { /* no helpers: the caller holds the only reference */
        state_put(rs->p, rs);
        return;
    }
    pthread_mutex_lock(&rs->mu);
    bool last = --rs->refs == 0;
    pthread_mutex_unlock(&rs->mu);
    if (last) state_put(rs->p, rs);
}

static void helper_task(void *arg) {
    vg__run_state *rs = arg;
    parallel_work(rs, true); /* leaves rs->helpers one lower (see there) */
    state_release(rs);
}

/* Whether node id splits over the intra-op pool while that pool already has a thread
 * for every inter-op helper besides the caller: such a kernel keeps every thread busy. */
static bool node_splits_all(const vg__run_state *rs, int id) {
    return atomic_load_explicit(&rs->p->nodes[id].splits, memory_order_relaxed) &&
           rs->s->intra_threads >= rs->s->inter_helpers + 1;
}

/* One such node at a time: run side by side, two kernels would share the same cores
 * with one thread more than there are. When a helper took whatever was ready, the
 * CNN's two conv2 gradients ran side by side at 2 threads, one thread each (5.6 ms
 * each, the 1-thread time), instead of each split in turn (3.0 and 3.5 ms). Whoever is
 * free takes the next one once the running one is done (a caller with nothing to take
 * meanwhile takes shares of the running one's split, run_parallel). Lock held. */
static bool split_waits(const vg__run_state *rs, int id) {
    return rs->split_running > 0 && node_splits_all(rs, id);
}

/* Takes a ready node: the caller takes any; a pool helper only non-blocking ones (so a
 * queue op never parks a pool thread that other runs may need) unless the caller is in
 * a blocking node itself; nobody a node that splits over the intra-op pool while such
 * a node runs (split_waits). -1 if none. Lock held.
 * Plans with collectives take by priority: the caller a ready collective first (its
 * reduce then runs on the communication thread while helpers go on with the other
 * nodes), then anyone a node that feeds a collective, then the newest ready node. */
static int take_ready(vg__run_state *rs, bool helper) {
    if (rs->p->collectives) {
        int best = -1, best_pr = -1;
        for (int k = rs->nready - 1; k >= 0 && best_pr < 2; k--) {
            const vg__node *n = &rs->p->nodes[rs->ready[k]];
            if (helper && (n->def->flags & VG__OP_BLOCKING)) continue;
            int pr = (n->def->flags & VG__OP_COLLECTIVE) ? 2 : n->feeds_collective ? 1 : 0;
            if (pr > best_pr) best = k, best_pr = pr;
        }
        if (best < 0) return -1;
        int id = rs->ready[best];
        rs->ready[best] = rs->ready[--rs->nready];
        return id;
    }
    /* While the caller waits in a blocking node, a helper takes blocking nodes too: the
     * caller's dequeue may wait for an enqueue of the same run, which nobody else would
     * run (TF's executor runs any ready node on any of its threads). */
    bool skip_blocking = helper && !rs->caller_blocking;
    for (int k = rs->nready - 1; k >= 0; k--) {
        int id = rs->ready[k];
        if (skip_blocking && (rs->p->nodes[id].def->flags & VG__OP_BLOCKING)) continue;
        if (split_waits(rs, id)) continue;
        rs->ready[k] = rs->ready[--rs->nready];
        return id;
    }
    return -1;
}

/* A node worth a hand-off to another thread: not measured yet, or it took at least
 * EXEC_EXPENSIVE_NS on average. Cheaper nodes run on the thread that made them ready:
 * on a machine where a wake-up or a migrated cache line costs microseconds, running
 * two cheap nodes side by side is slower than running them one after the other, and a
 * kernel that splits its work over the shared pool already uses the other threads. */
#define EXEC_EXPENSIVE_NS 20000
static bool node_expensive(const vg__plan *p, int id) {
    const vg__node *n = &p->nodes[id];
    if (n->is_var_read || (n->def->flags & VG__OP_CONST)) return false;
    int64_t c = atomic_load_explicit(&p->cost_ns[id], memory_order_relaxed);
    return c == 0 || c >= EXEC_EXPENSIVE_NS;
}

/* An expensive node whose kernel split its last run over the intra-op pool already
 * keeps the threads busy: running a second such node beside it on a helper only makes
 * the two compete for the same cores (CNN at 2 threads: the two conv2 gradients side
 * by side took 12.3 ms per step, one after the other 10.5 ms). */
static bool node_wants_helper(const vg__run_state *rs, int id) {
    if (!node_expensive(rs->p, id)) return false;
    return !(atomic_load_explicit(&rs->p->nodes[id].splits, memory_order_relaxed) &&
             rs->s->intra_threads >= rs->s->inter_helpers + 1);
}

/* Ready work left for helpers once this thread took node `taken`: when that node is
 * expensive (the rest would wait behind it), or more expensive ready nodes than
 * helpers on them. When everything is cheap this thread runs it all, soon (lock held;
 * looks at up to 32 ready nodes). Plans with collectives offer any ready work: their
 * caller must stay free for the next collective while the gradients feeding it run. */
static bool want_helper(const vg__run_state *rs, int taken) {
    if (rs->helpers >= rs->s->inter_helpers || rs->nready <= rs->helpers) return false;
    if (rs->p->collectives) return true;
    if (node_wants_helper(rs, taken)) return true;
    int nexp = 0;
    for (int k = rs->nready - 1; k >= 0 && k >= rs->nready - 32; k--)
        if (node_wants_helper(rs, rs->ready[k]) && ++nexp > rs->helpers) return true;
    return false;
}

static void parallel_work(vg__run_state *rs, bool helper) {
    vg__plan *p = rs->p;
    pthread_mutex_lock(&rs->mu);
    for (;;) {
        int id = take_ready(rs, helper);
        if (id < 0) {
            /* A helper stops counting in the same critical section as its last look:
             * counted until it returned, it made a caller that took a dequeue just
             * then start no helper, and the enqueue the dequeue waited for (ready, but
             * blocking, so skipped in that last look) never ran (a TSan run of
             * test_core__blocking_caller_split_node timed out). */
            if (helper) rs->helpers--;
            break;
        }
        /* set before any other thread looks (take_ready), cleared when the node is done */
        bool blocking = !helper && (p->nodes[id].def->flags & VG__OP_BLOCKING);
        if (blocking) rs->caller_blocking = true;
        bool split = node_splits_all(rs, id);
        if (split) rs->split_running++;
        /* more expensive ready work than helpers on it: offer it to the pool */
        bool spawn = want_helper(rs, id) ||
                     (blocking && rs->helpers < rs->s->inter_helpers && rs->nready > rs->helpers);
        if (spawn) {
            rs->helpers++;
            rs->refs++;
        }
        pthread_mutex_unlock(&rs->mu);
        if (spawn && !vg__pool_submit(rs->s->inter, helper_task, rs)) {
            pthread_mutex_lock(&rs->mu);
            rs->helpers--;
            rs->refs--;
            pthread_mutex_unlock(&rs->mu);
        }
        vg__node *n = &p->nodes[id];
        vg_status st;
        st.code = VG_OK;
        st.msg[0] = 0;
        bool skip = atomic_load_explicit(&rs->failed, memory_order_acquire);
        int64_t k0 = vg__now_ns();
        if (!skip && exec_node(rs, n, true, &st) != VG_OK) fail_run(rs, &st);
        int64_t dt = vg__now_ns() - k0, old = atomic_load_explicit(&p->cost_ns[id], memory_order_relaxed);
        if (dt < 1) dt = 1;
        atomic_store_explicit(&p->cost_ns[id], old ? (3 * old + dt) / 4 : dt, memory_order_relaxed);
        if (skip)
            for (int i = 0; i < n->ninputs; i++)
                if (n->in_slot[i] >= 0) release_slot(rs, n->in_slot[i], true);
        int nnew = 0;
        pthread_mutex_lock(&rs->mu);
        if (blocking) rs->caller_blocking = false;
        for (int k = 0; k < n->nsucc; k++) {
            int sid = n->succ[k];
            if (atomic_fetch_sub(&rs->pending[sid], 1) == 1) {
                rs->ready[rs->nready++] = sid;
                nnew++;
            }
        }
        rs->ndone++;
        /* a split node done: a caller waiting with only split nodes ready wakes too */
        bool freed = split && --rs->split_running == 0 && rs->nready > nnew;
        if (rs->ndone == p->nnodes || nnew || freed) {
            atomic_fetch_add_explicit(&rs->progress, 1, memory_order_release);
            pthread_cond_broadcast(&rs->cv);
        }
    }
    pthread_mutex_unlock(&rs->mu);
}

static void run_parallel(vg__run_state *rs) {
    vg__plan *p = rs->p;
    rs->nready = 0;
    rs->ndone = 0;
    rs->helpers = 0;
    rs->caller_blocking = false;
    rs->split_running = 0;
    for (int i = 0; i < p->nnodes; i++) {
        atomic_store(&rs->pending[i], p->nodes[i].npred);
        if (!p->nodes[i].npred) rs->ready[rs->nready++] = i;
    }
    vg__pool *pool = rs->s->inter;
    int64_t spin = vg__pool_spin_ns(pool);
    for (;;) {
        parallel_work(rs, false);
        pthread_mutex_lock(&rs->mu);
        /* something take_ready would give the caller (plans with collectives: anything) */
        bool finished = rs->ndone == p->nnodes, have = p->collectives && rs->nready > 0;
        for (int k = 0; k < rs->nready && !have; k++) have = !split_waits(rs, rs->ready[k]);
        unsigned seen = atomic_load_explicit(&rs->progress, memory_order_relaxed);
        pthread_mutex_unlock(&rs->mu);
        if (finished) break;
        if (have) continue;
        /* Nothing ready: the helpers run the nodes in flight. Take shares of their
         * kernels' splits meanwhile (so the critical path keeps every thread even when
         * it runs on a helper; never a helper task: the caller stays free for the
         * blocking and collective nodes only it takes), spin for one window, then sleep
         * until a node completes. */
        int64_t t0 = vg__pool_now_ns();
        for (unsigned it = 0; atomic_load_explicit(&rs->progress, memory_order_acquire) == seen; it++) {
            if (vg__pool_help(pool)) continue;
            vg__spin_pause();
            if ((it & 15) == 15 && vg__pool_now_ns() - t0 > spin) {
                pthread_mutex_lock(&rs->mu);
                while (atomic_load_explicit(&rs->progress, memory_order_relaxed) == seen)
                    pthread_cond_wait(&rs->cv, &rs->mu);
                pthread_mutex_unlock(&rs->mu);
                break;
            }
        }
    }
}

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

static vg_code plan_run(vg_session *s, vg__plan *p, const vg_run_options *ro, vg_tensor *const *feed_values,
                        vg_tensor **out, vg_run_metadata *md, vg_status *st);

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
    atomic_store(&rs->failed, false);
    rs->err.code = VG_OK;
    rs->err.msg[0] = 0;
    rs->step_res = NULL;
    if (p->cf) {
        vg_code crc = vg__cf_run(rs, feed_values, out, st);
        vg__step_res_free(rs);
        state_release(rs);
        return crc;
    }
    for (int i = 0; i < p->nslots; i++) {
        rs->vals[i] = NULL;
        atomic_store_explicit(&rs->uses[i], p->slot_uses[i], memory_order_relaxed);
    }
    for (int i = 0; i < p->nfeeds; i++)
        if (p->feed_slot[i] >= 0 && p->slot_uses[p->feed_slot[i]] > 0)
            rs->vals[p->feed_slot[i]] = vg_tensor_ref(feed_values[i]);
    rs->refs = 1;
    if (p->parallel) {
        run_parallel(rs);
    } else {
        for (int k = 0; k < p->nnodes; k++) {
            if (exec_node(rs, &p->nodes[p->order[k]], false, &rs->err) != VG_OK) {
                atomic_store(&rs->failed, true);
                break;
            }
        }
    }
    vg_code rc = VG_OK;
    if (atomic_load(&rs->failed)) {
        rc = rs->err.code ? rs->err.code : VG_INTERNAL;
        vg_status_copy(st, &rs->err);
        for (int i = 0; i < p->nfetches; i++) out[i] = NULL;
    } else {
        for (int i = 0; i < p->nfetches; i++) out[i] = vg_tensor_ref(rs->vals[p->fetch_slot[i]]);
    }
    for (int i = 0; i < p->nslots; i++)
        if (rs->vals[i]) { vg_tensor_free(rs->vals[i]); rs->vals[i] = NULL; }
    if (rs->step_res) vg__step_res_free(rs);
    state_release(rs);
    return rc;
}
