/*
 * gradients.c - vg_gradients: TensorFlow's gradients_impl in C.
 *
 * 1. Mark the ops between xs and ys (reachable forward from xs and backward from ys).
 * 2. Count, for every op on the path, how many of its outputs' consumers are on the
 *    path (pending). Seed each y with grad_ys or Fill(Shape(y), 1).
 * 3. Process ops whose consumers have all delivered gradients: sum each output's
 *    incoming gradients (AddN), fill missing output gradients with zeros, call the
 *    op's gradient function under "gradients/<op>_grad", hand the input gradients to
 *    the producers.
 * Only floating-point tensors carry gradients, and resource handles (the gradient of a
 * resource variable's reads flows to its handle).
 */
#include "graph/graph_impl.h"
#include "kernels/control/control_flow_internal.h"
#include "kernels/state/resource_var.h"
#include "vigil/gradients.h"
#include "vigil/resource_variables.h"
#include "vigil/ops.h"
#include <stdio.h>

typedef struct glist {
    vg_output *v;
    int n, cap;
} glist;

typedef struct gstate {
    vg_graph *g;
    int nops;
    bool *fwd, *bwd;
    int *pending;
    glist **grads; /* per op: array of noutputs lists */
    /* control flow: while loops below `base` are differentiated as one region each */
    vg__cf_info *ci;
    int base;
    int *region;   /* per op: the while context it belongs to as a region, -1 none */
    int *rdone;    /* per context: needed Exits processed */
    int *rneed;    /* per context: needed Exits */
} gstate;

static vg_code backprop(vg_graph *g, const vg_output *ys, int nys, const vg_output *xs, int nxs,
                        const vg_output *grad_ys, vg_output *dxs, int base, bool body, vg_status *st);

/* TF's _IsBackpropagatable: floating and complex dtypes. */
static bool is_float(vg_dtype dt) {
    return dt == VG_FLOAT || dt == VG_DOUBLE || dt == VG_HALF || dt == VG_BFLOAT16 || dt == VG_COMPLEX64 || dt == VG_COMPLEX128;
}
/* A resource variable's handle takes the gradient of its reads (TF's _IsBackpropagatable). */
static bool carries_grad(vg_dtype dt) { return is_float(dt) || dt == VG_RESOURCE; }

static bool glist_add(glist *l, vg_output o) {
    if (!vg__grow((void **)&l->v, &l->cap, l->n + 1, sizeof(vg_output))) return false;
    l->v[l->n++] = o;
    return true;
}

static void gstate_free(gstate *s) {
    if (s->grads)
        for (int i = 0; i < s->nops; i++) {
            if (!s->grads[i]) continue;
            for (int k = 0; k < s->g->ops[i]->noutputs; k++) vg__free(s->grads[i][k].v);
            vg__free(s->grads[i]);
        }
    vg__free(s->grads);
    vg__free(s->fwd);
    vg__free(s->bwd);
    vg__free(s->pending);
    vg__free(s->region);
    vg__free(s->rdone);
    vg__free(s->rneed);
}

/* The region (the outermost while context that does not enclose s->base) an op
 * belongs to: the loop's Enters and Exits are part of it. */
static int region_of(const gstate *s, const vg_op *op) {
    vg__cf_info *ci = s->ci;
    if (!ci) return -1;
    int c;
    if (strcmp(op->def->type, "Enter") == 0) c = vg__cf_out_ctx(ci, vg_out((vg_op *)op, 0));
    else if (strcmp(op->def->type, "Exit") == 0 && op->ninputs == 1) c = vg__cf_ctx_of(ci, op->inputs[0].op);
    else c = vg__cf_ctx_of(ci, op);
    /* up to the first context that encloses base (a sibling loop of base's is a region
     * too) */
    int r = -1;
    for (; c >= 0 && !vg__cf_is_ancestor(ci, c, s->base); c = ci->ctx[c].parent)
        if (ci->ctx[c].kind == VG__CTX_WHILE) r = c;
    return r;
}

/* Forward reachability from xs: sweeps in creation order (a topological order, except
 * for loop back edges and the captures of control-flow contexts: repeated until
 * nothing changes). */
static void mark_forward(gstate *s, const vg_output *xs, int nxs) {
    for (int i = 0; i < nxs; i++) s->fwd[xs[i].op->id] = true;
    for (bool changed = true; changed;) {
        changed = false;
        for (int i = 0; i < s->nops; i++) {
            vg_op *op = s->g->ops[i];
            if (s->fwd[i]) continue;
            /* only through tensors that carry gradients (TF's _MarkReachedOps follows
             * trainable outputs: a Shape of x does not make x reach the result;
             * testCondGradMultiDevice's second derivative is None) */
            for (int k = 0; k < op->ninputs; k++)
                if (op->inputs[k].op->id < s->nops && s->fwd[op->inputs[k].op->id] &&
                    carries_grad(vg_output_dtype(op->inputs[k]))) {
                    s->fwd[i] = changed = true;
                    break;
                }
        }
        if (!s->ci) break;
    }
}

/* Backward reachability from ys; with stop (a loop body) the walk ends at the xs. */
static void mark_backward(gstate *s, const vg_output *ys, int nys, const vg_output *xs, int nxs, bool stop) {
    for (int i = 0; i < nys; i++) s->bwd[ys[i].op->id] = true;
    for (bool changed = true; changed;) {
        changed = false;
        for (int i = s->nops - 1; i >= 0; i--) {
            /* as TF's _PendingCount: the walk goes on only through ops reached from the
             * xs (a Rank of x feeding a reduction's axes is not between them) */
            if (!s->bwd[i] || !s->fwd[i]) continue;
            vg_op *op = s->g->ops[i];
            bool is_x = false;
            for (int k = 0; stop && k < nxs && !is_x; k++) is_x = xs[k].op == op;
            /* a loop body's walk also ends at the Identity of every loop variable (an
             * int32 one, not among the xs, would lead around the back edge and put the
             * NextIteration inputs on their own path: testWhileGradientWithNontrainablePath2) */
            const vg__cf_ctx *bc = stop && s->base >= 0 ? &s->ci->ctx[s->base] : NULL;
            for (int k = 0; bc && k < bc->nvars && !is_x; k++) is_x = bc->identities[k] == op;
            if (is_x) continue;
            for (int k = 0; k < op->ninputs; k++) {
                int src = op->inputs[k].op->id;
                if (src < s->nops && !s->bwd[src]) s->bwd[src] = changed = true;
            }
        }
        if (!s->ci) break;
    }
}

static vg_output aggregate(vg_graph *g, glist *l) {
    if (l->n == 0) return (vg_output){NULL, 0};
    if (l->n == 1) return l->v[0];
    return vg_add_n(g, l->v, l->n, NULL);
}

/* TF's check in _GradientsHelper: gradients taken inside a while loop's body may not
 * pass through a Switch of that loop (the loop variable's initial value);
 * testGradInWhileWrtInitialLoopVal. */
static bool is_loop_switch_of_current(const gstate *s, const vg_op *op) {
    vg__cf_info *ci = s->ci;
    if (!ci || ci->cur < 0 || ci->ctx[ci->cur].kind != VG__CTX_WHILE || strcmp(op->def->type, "Switch") != 0)
        return false;
    const vg__cf_ctx *c = &ci->ctx[ci->cur];
    for (int i = 0; c->switches && i < c->nvars; i++)
        if (c->switches[i] == op) return true;
    return false;
}

/* _RaiseNoGradWrtInitialLoopValError: names the x nearest to op (breadth-first over
 * the inputs). */
static vg_code no_grad_wrt_initial_loop_val(vg_graph *g, const vg_op *op, const vg_output *xs, int nxs,
                                            vg_status *st) {
    const vg_op *target = NULL;
    int n = g->nops;
    const vg_op **q = vg__malloc(sizeof(vg_op *) * (size_t)(n + 1));
    bool *seen = vg__calloc((size_t)n + 1, sizeof(bool));
    if (q && seen) {
        int h = 0, t = 0;
        q[t++] = op;
        seen[op->id] = true;
        while (h < t && !target) {
            const vg_op *cur = q[h++];
            for (int i = 0; i < nxs && !target; i++)
                if (xs[i].op == cur) target = cur;
            for (int k = 0; !target && k < cur->ninputs; k++) {
                const vg_op *in = cur->inputs[k].op;
                if (in->id < n && !seen[in->id]) {
                    seen[in->id] = true;
                    q[t++] = in;
                }
            }
        }
    }
    vg__free(q);
    vg__free(seen);
    return vg_status_set(st, VG_INVALID_ARGUMENT,
                         "Cannot compute gradient inside while loop with respect to op '%s'. We do not support taking "
                         "the gradient wrt or through the initial value of a loop variable. Gradients can be computed "
                         "through loop invariants or wrt the input parameters to the loop body.",
                         target ? target->name : (nxs > 0 ? xs[0].op->name : "?"));
}

/* ---- while loops: TF's gradient while loop -------------------------------------- */

typedef struct loop_grad {
    gstate *s;
    int c;            /* the forward while context */
    int nf;           /* float loop variables */
    int *fvar;        /* their indices */
    int ncap;         /* float captured tensors (Enters with is_constant) */
    vg_op **caps;
    vg_status *st;
} loop_grad;

static vg_code lg_cond(vg_graph *g, const vg_output *v, int n, void *user, vg_output *pred) {
    (void)n;
    (void)user;
    *pred = vg_greater(g, v[0], vg_const_i32(g, 0, "b_count"), NULL);
    return VG_OK;
}

/* x with the static shape of ref when ref's is fully defined and x's is less specific
 * (a gradient through a broadcasting op, reshaped from a run-time Shape, has the value's
 * shape only at run time): keeps the gradient loop's variables within their invariants. */
static vg_output with_static_shape(vg_graph *g, vg_output x, vg_output ref) {
    vg_shape rs = vg_output_shape(ref), xs = vg_output_shape(x);
    if (!x.op || rs.ndims < 0) return x;
    bool same = xs.ndims == rs.ndims;
    for (int i = 0; i < rs.ndims; i++) {
        if (rs.dims[i] < 0) return x;
        if (same && xs.dims[i] != rs.dims[i]) same = false;
    }
    return same ? x : vg_reshape_c(g, x, rs.dims, rs.ndims, NULL);
}

static vg_code lg_body(vg_graph *g, const vg_output *v, int n, void *user, vg_output *outs) {
    (void)n;
    loop_grad *lg = user;
    vg__cf_ctx *cx = &lg->s->ci->ctx[lg->c];
    int nx = lg->nf + lg->ncap;
    vg_output *ys = vg__calloc((size_t)nx + 1, sizeof(vg_output) * 3);
    if (!ys) return VG_OOM(lg->st, "while gradient");
    vg_output *xs = ys + nx + 1, *dxs = xs + nx + 1;
    for (int j = 0; j < lg->nf; j++) {
        ys[j] = cx->nexts[lg->fvar[j]]->inputs[0];
        xs[j] = vg_out(cx->identities[lg->fvar[j]], 0);
    }
    for (int k = 0; k < lg->ncap; k++) xs[lg->nf + k] = vg_out(lg->caps[k], 0);
    outs[0] = vg_sub(g, v[0], vg_const_i32(g, 1, "b_count"), NULL);
    vg_code rc = backprop(g, ys, lg->nf, xs, nx, v + 1, dxs, lg->c, true, lg->st);
    for (int j = 0; rc == VG_OK && j < lg->nf; j++)
        outs[1 + j] = dxs[j].op ? with_static_shape(g, dxs[j], v[1 + j]) : vg_zeros_like(g, v[1 + j], NULL);
    for (int k = 0; rc == VG_OK && k < lg->ncap; k++) {
        vg_output acc = v[1 + lg->nf + k];
        outs[1 + lg->nf + k] = dxs[lg->nf + k].op ? with_static_shape(g, vg_add(g, acc, dxs[lg->nf + k], NULL), acc) : acc;
    }
    vg__free(ys);
    return rc;
}

/* The gradient of while context c: dy[i] for its Exits (NULL ops: zero), gives dx for
 * the inputs of its Enters, in the order of `enters`. */
static vg_code loop_gradient(gstate *s, int c, vg_op **enters, int nenters, vg_output *dx, vg_status *st) {
    vg_graph *g = s->g;
    vg__cf_info *ci = s->ci;
    vg__cf_ctx *cx = &ci->ctx[c];
    int nv = cx->nvars;
    vg_code rc = VG_OK;
    loop_grad lg = {s, c, 0, NULL, 0, NULL, st};
    lg.fvar = vg__calloc((size_t)nv + 1, sizeof(int));
    lg.caps = vg__calloc((size_t)nenters + 1, sizeof(vg_op *));
    vg_output *lv = vg__calloc((size_t)(nv + nenters) + 2, sizeof(vg_output) * 2);
    if (!lg.fvar || !lg.caps || !lv) { rc = VG_OOM(st, "while gradient"); goto done; }
    vg_output *lo = lv + nv + nenters + 2;
    for (int j = 0; j < nv; j++)
        if (is_float(cx->exits[j]->out_dtypes[0])) lg.fvar[lg.nf++] = j;
    for (int e = 0; e < nenters; e++) {
        bool is_var = false;
        for (int j = 0; j < nv && !is_var; j++) is_var = cx->enters[j] == enters[e];
        /* captured float tensors, and captured resource handles: the reads of a
         * resource variable in the body accumulate their gradient for the handle (TF's
         * AddBackpropAccumulator on the handle's Enter; testWhileGrad_ResourceVariable) */
        if (!is_var && carries_grad(enters[e]->out_dtypes[0]) && s->fwd[enters[e]->id]) lg.caps[lg.ncap++] = enters[e];
    }
    int nst0 = cx->nstacks;
    rc = vg__cf_forward_count(g, ci, c, &lv[0], st);
    if (rc != VG_OK) goto done;
    cx = &ci->ctx[c];
    for (int j = 0; j < lg.nf; j++) {
        vg_op *ex = cx->exits[lg.fvar[j]];
        glist *l = s->grads[ex->id] ? &s->grads[ex->id][0] : NULL;
        vg_output dy = l ? aggregate(g, l) : vg_out(NULL, 0);
        lv[1 + j] = dy.op ? dy : vg_zeros_like(g, vg_out(ex, 0), NULL);
    }
    for (int k = 0; k < lg.ncap; k++) {
        vg_output in = lg.caps[k]->inputs[0];
        if (vg_output_dtype(in) != VG_RESOURCE) {
            lv[1 + lg.nf + k] = vg_zeros_like(g, in, NULL);
            continue;
        }
        /* zeros of the variable's value: its static shape, else VariableShape */
        vg_dtype vdt;
        vg_shape vs;
        if (!vg__rvar_handle_info(lg.caps[k], 0, &vdt, &vs) || !is_float(vdt)) {
            rc = vg_status_set(st, VG_INVALID_ARGUMENT,
                               "gradient of while loop '%s': the resource '%s' captured in the body is not a float "
                               "resource variable of known dtype",
                               cx->frame_name, in.op->name);
            goto done;
        }
        bool full = vs.ndims >= 0;
        for (int d = 0; full && d < vs.ndims; d++) full = vs.dims[d] >= 0;
        lv[1 + lg.nf + k] = full ? vg_const_fill(g, vdt, vs.dims, vs.ndims, 0.0, "b_acc")
                                 : vg_fill(g, vg_variable_shape(g, in, VG_INT32, NULL),
                                           vg_const_fill(g, vdt, NULL, 0, 0.0, NULL), "b_acc");
    }
    if (g->err.code != VG_OK) { rc = vg_graph_status(g, st); goto done; }
    rc = vg__cf_grad_while(g, c, lg_cond, lg_body, &lg, lv, 1 + lg.nf + lg.ncap, lo, st);
    if (rc != VG_OK) goto done;
    /* the stacks made for this gradient go back to the pool once it has run */
    cx = &ci->ctx[c];
    vg_op *closes[64];
    int nclose = 0;
    vg_op *after[1] = {lo[0].op};
    for (int i = nst0; i < cx->nstacks && nclose < 64; i++) {
        vg_graph_push_control_deps(g, after, 1);
        vg_op *cl = vg_stack_close(g, cx->stacks[i], "b_acc_close");
        vg_graph_pop_control_deps(g);
        if (cl) closes[nclose++] = cl;
    }
    cx->nstacks = nst0;
    for (int e = 0; e < nenters; e++) {
        dx[e] = vg_out(NULL, 0);
        int slot = -1;
        for (int j = 0; j < lg.nf; j++)
            if (cx->enters[lg.fvar[j]] == enters[e]) slot = 1 + j;
        for (int k = 0; k < lg.ncap; k++)
            if (lg.caps[k] == enters[e]) slot = 1 + lg.nf + k;
        if (slot < 0) continue;
        if (nclose) {
            vg_graph_push_control_deps(g, closes, nclose);
            dx[e] = vg_identity(g, lo[slot], NULL);
            vg_graph_pop_control_deps(g);
        } else {
            dx[e] = lo[slot];
        }
    }
    if (g->err.code != VG_OK) rc = vg_graph_status(g, st);
done:
    vg__free(lg.fvar);
    vg__free(lg.caps);
    vg__free(lv);
    return rc;
}


vg_code vg_gradients(vg_graph *g, const vg_output *ys, int nys, const vg_output *xs, int nxs,
                     const vg_output *grad_ys, vg_output *dxs, vg_status *st) {
    if (!g || nys < 0 || nxs < 0 || (nys > 0 && !ys) || (nxs > 0 && (!xs || !dxs)))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_gradients: NULL graph, or a NULL array (ys, xs, dxs) with a count > 0");
    for (int i = 0; i < nxs; i++) dxs[i] = (vg_output){NULL, 0};
    if (vg_graph_status(g, st) != VG_OK) return st ? st->code : g->err.code;
    if (g->finalized)
        return vg_status_set(st, VG_FAILED_PRECONDITION, "Graph is finalized and cannot be modified.");
    for (int i = 0; i < nys; i++)
        if (!ys[i].op || ys[i].op->graph != g) return vg_status_set(st, VG_INVALID_ARGUMENT, "ys[%d] is not in the graph", i);
    for (int i = 0; i < nxs; i++)
        if (!xs[i].op || xs[i].op->graph != g) return vg_status_set(st, VG_INVALID_ARGUMENT, "xs[%d] is not in the graph", i);
    /* called while a cond branch or loop body is being built (a gradient inside the
     * body): the loops around it are not regions, those inside it are
     * (testWhileGradInWhile) */
    vg__cf_info *ci = vg__cf_info_get(g, false);
    return backprop(g, ys, nys, xs, nxs, grad_ys, dxs, ci ? ci->cur : -1, false, st);
}

/* Backpropagation from ys to xs. Loops nested in context base (-1: the root) are
 * regions of their own; body: the backpropagation through the body of while context
 * base inside its gradient loop (the walk stops at the xs). */
static vg_code backprop(vg_graph *g, const vg_output *ys, int nys, const vg_output *xs, int nxs,
                        const vg_output *grad_ys, vg_output *dxs, int base, bool body, vg_status *st) {
    for (int i = 0; i < nxs; i++) dxs[i] = (vg_output){NULL, 0};
    gstate s = {.g = g, .nops = g->nops};
    int *queue = NULL, qh = 0, qt = 0;
    vg_code rc = VG_OK;
    s.fwd = vg__calloc((size_t)s.nops + 1, sizeof(bool));
    s.bwd = vg__calloc((size_t)s.nops + 1, sizeof(bool));
    s.pending = vg__calloc((size_t)s.nops + 1, sizeof(int));
    s.grads = vg__calloc((size_t)s.nops + 1, sizeof(glist *));
    queue = vg__malloc(sizeof(int) * (size_t)(s.nops + 1));
    if (!s.fwd || !s.bwd || !s.pending || !s.grads || !queue) goto oom;
    s.ci = vg__cf_info_get(g, false);
    s.base = base;
    if (s.ci) {
        s.region = vg__malloc(sizeof(int) * (size_t)(s.nops + 1));
        s.rdone = vg__calloc((size_t)s.ci->n + 1, sizeof(int));
        s.rneed = vg__calloc((size_t)s.ci->n + 1, sizeof(int));
        if (!s.region || !s.rdone || !s.rneed) goto oom;
        for (int i = 0; i < s.nops; i++) s.region[i] = region_of(&s, g->ops[i]);
    }
    mark_forward(&s, xs, nxs);
    mark_backward(&s, ys, nys, xs, nxs, body);
    /* a loop that vg_while_loop did not build (imported from a GraphDef) has no
     * context to build its gradient loop from */
    for (int i = 0; i < s.nops; i++)
        if (s.fwd[i] && s.bwd[i] && strcmp(g->ops[i]->def->type, "NextIteration") == 0 &&
            (!s.region || s.region[i] < 0) && (base < 0 || vg__cf_ctx_of(s.ci, g->ops[i]) != base)) {
            gstate_free(&s);
            vg__free(queue);
            return vg_status_set(st, VG_UNIMPLEMENTED,
                                 "gradient through the while loop of '%s': only loops built by vg_while_loop can be "
                                 "differentiated (an imported loop has no while context)",
                                 g->ops[i]->name);
        }
    /* between = fwd && bwd; pending = consumers on the path (a while loop's inside is
     * one region: its own edges do not count) */
    for (int i = 0; i < s.nops; i++) {
        vg_op *op = g->ops[i];
        if (!(s.fwd[i] && s.bwd[i])) continue;
        if (s.region && s.region[i] >= 0 && strcmp(op->def->type, "Exit") == 0 && op->ninputs == 1 &&
            vg__cf_ctx_of(s.ci, op->inputs[0].op) == s.region[i])
            s.rneed[s.region[i]]++; /* the loop's own Exits (not those of loops inside it) */
        for (int k = 0; k < op->ninputs; k++) {
            int src = op->inputs[k].op->id;
            if (s.region && s.region[i] >= 0 && s.region[src] == s.region[i]) continue;
            if (s.fwd[src] && s.bwd[src]) s.pending[src]++;
        }
    }
    for (int i = 0; i < s.nops; i++) {
        if (!(s.fwd[i] && s.bwd[i]) && !s.bwd[i]) continue;
        int no = g->ops[i]->noutputs;
        s.grads[i] = vg__calloc((size_t)(no ? no : 1), sizeof(glist));
        if (!s.grads[i]) goto oom;
    }
    if (!body) vg_graph_push_scope(g, "gradients");
    /* seed ys */
    for (int i = 0; i < nys; i++) {
        vg_output gy;
        if (grad_ys && grad_ys[i].op) {
            gy = grad_ys[i];
        } else {
            char nm[32];
            snprintf(nm, sizeof nm, "grad_ys_%d", i);
            vg_dtype dt = vg_output_dtype(ys[i]);
            vg_output shape = vg_shape_op(g, ys[i], VG_INT32, NULL);
            vg_output one = vg_const_fill(g, dt, NULL, 0, 1.0, nm);
            gy = vg_fill(g, shape, one, NULL);
        }
        if (!gy.op) goto graph_err;
        if (!s.grads[ys[i].op->id] || !glist_add(&s.grads[ys[i].op->id][ys[i].index], gy)) goto oom_pop;
    }
    /* ready: ops on the path (or ys) with no pending consumers */
    {
        bool *queued = vg__calloc((size_t)s.nops + 1, sizeof(bool));
        if (!queued) goto oom_pop;
        for (int i = 0; i < nys; i++) {
            int id = ys[i].op->id;
            if (!queued[id] && s.pending[id] == 0) { queued[id] = true; queue[qt++] = id; }
        }
        while (qh < qt) {
            int id = queue[qh++];
            vg_op *op = g->ops[id];
            bool on_path = s.fwd[id] && s.bwd[id];
            if (s.region && s.region[id] >= 0) {
                /* a while loop: differentiated as a whole once all its Exits are in */
                int r = s.region[id];
                if (!on_path || strcmp(op->def->type, "Exit") != 0 || ++s.rdone[r] != s.rneed[r]) continue;
                int ne = 0;
                vg_op **enters = vg__malloc(sizeof(vg_op *) * (size_t)(s.nops + 1));
                vg_output *dxe = vg__calloc((size_t)s.nops + 1, sizeof(vg_output));
                if (!enters || !dxe) {
                    vg__free(enters);
                    vg__free(dxe);
                    vg__free(queued);
                    goto oom_pop;
                }
                for (int i = 0; i < s.nops; i++)
                    if (s.region[i] == r && strcmp(g->ops[i]->def->type, "Enter") == 0 &&
                        vg__cf_out_ctx(s.ci, vg_out(g->ops[i], 0)) == r)
                        enters[ne++] = g->ops[i];
                /* TF's _UpdatePendingAndEnqueueReady: when none of the loop's Exits got
                 * a gradient (all cut by stop_gradient, say) the loop gives None, not
                 * zeros (testWhileGrad_StopGrad) */
                bool any_exit_grad = false;
                for (int j = 0; j < s.ci->ctx[r].nvars && !any_exit_grad; j++) {
                    vg_op *ex = s.ci->ctx[r].exits[j];
                    any_exit_grad = s.grads[ex->id] && s.grads[ex->id][0].n > 0;
                }
                if (any_exit_grad) {
                    vg_graph_push_scope(g, "while_grad");
                    rc = loop_gradient(&s, r, enters, ne, dxe, st);
                    vg_graph_pop_scope(g);
                }
                for (int e = 0; rc == VG_OK && e < ne; e++) {
                    vg_op *en = enters[e];
                    if (!(s.fwd[en->id] && s.bwd[en->id])) continue;
                    vg_output in = en->inputs[0];
                    int src = in.op->id;
                    if (!(s.fwd[src] && s.bwd[src])) continue;
                    if (dxe[e].op && s.grads[src] && !glist_add(&s.grads[src][in.index], dxe[e])) {
                        rc = VG_OOM(st, "gradients");
                        break;
                    }
                    if (--s.pending[src] == 0 && !queued[src]) { queued[src] = true; queue[qt++] = src; }
                }
                vg__free(enters);
                vg__free(dxe);
                if (rc != VG_OK) break;
                continue;
            }
            char scope[1100];
            snprintf(scope, sizeof scope, "%s_grad", op->name);
            vg_graph_push_scope(g, scope);
            vg_output dy_local[8], dx_local[8];
            vg_output *dy = op->noutputs > 8 ? vg__calloc((size_t)op->noutputs, sizeof(vg_output)) : dy_local;
            vg_output *dx = op->ninputs > 8 ? vg__calloc((size_t)op->ninputs, sizeof(vg_output)) : dx_local;
            bool any = false;
            if (!dy || !dx) {
                if (dy != dy_local) vg__free(dy);
                if (dx != dx_local) vg__free(dx);
                vg_graph_pop_scope(g);
                vg__free(queued);
                goto oom_pop;
            }
            for (int k = 0; k < op->noutputs; k++) {
                dy[k] = s.grads[id] ? aggregate(g, &s.grads[id][k]) : (vg_output){NULL, 0};
                if (dy[k].op) any = true;
            }
            for (int k = 0; k < op->ninputs; k++) dx[k] = (vg_output){NULL, 0};
            const vg__op_def *def = op->def;
            if (on_path && any && is_loop_switch_of_current(&s, op)) {
                rc = no_grad_wrt_initial_loop_val(g, op, xs, nxs, st);
                if (dy != dy_local) vg__free(dy);
                if (dx != dx_local) vg__free(dx);
                vg_graph_pop_scope(g);
                break;
            }
            /* TF's stop ops: an x whose inputs do not depend on another x ends the walk */
            bool stop = false;
            for (int k = 0; k < nxs && !stop; k++) stop = xs[k].op == op;
            for (int k = 0; stop && k < op->ninputs; k++)
                if (s.fwd[op->inputs[k].op->id]) stop = false;
            bool call = on_path && any && !stop && !(def->flags & VG__OP_NOT_DIFFERENTIABLE);
            /* Inputs that are xs themselves stop here: no need to go further back, but
             * an op in between still propagates through them. */
            if (call && !def->grad) {
                rc = vg_status_set(st, VG_INVALID_ARGUMENT, "No gradient defined for operation '%s' (op type: %s)",
                                   op->name, def->type);
            } else if (call) {
                for (int k = 0; k < op->noutputs; k++)
                    if (!dy[k].op && is_float(op->out_dtypes[k])) {
                        /* TF's ZerosLikeOutsideLoop: a Switch's untaken side gets
                         * zeros(Shape(x)), which (an int32 path) does not make x reach
                         * the gradient (a second derivative through a cond is None) */
                        if (!strcmp(op->def->type, "Switch"))
                            dy[k] = vg_fill(g, vg_shape_op(g, vg_out(op, k), VG_INT32, NULL),
                                            vg_const_fill(g, op->out_dtypes[k], NULL, 0, 0.0, NULL), "zeros");
                        else
                            dy[k] = vg_zeros_like(g, vg_out(op, k), NULL);
                    }
                rc = def->grad(g, op, dy, dx);
                if (rc == VG_OK && g->err.code != VG_OK) rc = g->err.code;
                if (rc != VG_OK && g->err.code == VG_OK) /* declined without a graph error: none */
                    rc = vg_status_set(st, VG_INVALID_ARGUMENT, "No gradient defined for operation '%s' (op type: %s)",
                                       op->name, def->type);
                else if (rc != VG_OK) vg_graph_status(g, st);
            }
            if (rc == VG_OK) {
                for (int k = 0; k < op->ninputs; k++) {
                    vg_output in = op->inputs[k];
                    int src = in.op->id;
                    if (!(s.fwd[src] && s.bwd[src])) continue;
                    if (dx[k].op && carries_grad(vg_output_dtype(in)) && s.grads[src] &&
                        !glist_add(&s.grads[src][in.index], dx[k])) {
                        rc = VG_OOM(st, "gradients");
                        break;
                    }
                    if (--s.pending[src] == 0 && !queued[src]) { queued[src] = true; queue[qt++] = src; }
                }
            }
            if (dy != dy_local) vg__free(dy);
            if (dx != dx_local) vg__free(dx);
            vg_graph_pop_scope(g);
            if (rc != VG_OK) break;
        }
        vg__free(queued);
    }
    if (rc == VG_OK) {
        for (int i = 0; i < nxs; i++) {
            int id = xs[i].op->id;
            glist *l = s.grads[id] ? &s.grads[id][xs[i].index] : NULL;
            if (!l || !l->n) continue;
            if (l->n == 1) { dxs[i] = l->v[0]; continue; }
            char scope[1100];
            snprintf(scope, sizeof scope, "%s_grad", xs[i].op->name);
            vg_graph_push_scope(g, scope);
            dxs[i] = aggregate(g, l);
            vg_graph_pop_scope(g);
        }
        if (g->err.code != VG_OK) rc = vg_graph_status(g, st);
    }
    if (!body) vg_graph_pop_scope(g);
    vg__free(queue);
    gstate_free(&s);
    if (rc != VG_OK)
        for (int i = 0; i < nxs; i++) dxs[i] = (vg_output){NULL, 0};
    else vg_status_clear(st);
    return rc;
graph_err:
    if (!body) vg_graph_pop_scope(g);
    vg__free(queue);
    gstate_free(&s);
    {
        vg_code c = vg_graph_status(g, st);
        return c != VG_OK ? c : VG_INTERNAL;
    }
oom_pop:
    if (!body) vg_graph_pop_scope(g);
oom:
    vg__free(queue);
    gstate_free(&s);
    return VG_OOM(st, "gradients");
}
