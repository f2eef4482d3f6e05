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
 * Only floating-point tensors carry gradients.
 */
#include "graph/graph_impl.h"
#include "vigil/gradients.h"
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
} gstate;

static bool is_float(vg_dtype dt) { return dt == VG_FLOAT || dt == VG_DOUBLE; }

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
}

/* Forward reachability from xs: needs consumer lists; we sweep ops in creation order,
 * which is a topological order (inputs always exist before their consumers). */
static void mark_forward(gstate *s, const vg_output *xs, int nxs) {
    for (int i = 0; i < nxs; i++) s->fwd[xs[i].op->id] = true;
    for (int i = 0; i < s->nops; i++) {
        vg_op *op = s->g->ops[i];
        if (s->fwd[i]) continue;
        for (int k = 0; k < op->ninputs; k++)
            if (s->fwd[op->inputs[k].op->id]) { s->fwd[i] = true; break; }
    }
}

static void mark_backward(gstate *s, const vg_output *ys, int nys) {
    for (int i = 0; i < nys; i++) s->bwd[ys[i].op->id] = true;
    for (int i = s->nops - 1; i >= 0; i--) {
        if (!s->bwd[i]) continue;
        vg_op *op = s->g->ops[i];
        for (int k = 0; k < op->ninputs; k++) s->bwd[op->inputs[k].op->id] = true;
    }
}

static vg_output aggregate(vg_graph *g, glist *l) {
    if (l->n == 0) return (vg_output){NULL, 0};
    if (l->n == 1) return l->v[0];
    return vg_add_n(g, l->v, l->n, NULL);
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
    gstate s = {.g = g, .nops = g->nops};
    int *queue = NULL, qh = 0, qt = 0;
    vg_code rc = VG_OK;
    s.fwd = vg__calloc((size_t)s.nops + 1, sizeof(bool));
    s.bwd = vg__calloc((size_t)s.nops + 1, sizeof(bool));
    s.pending = vg__calloc((size_t)s.nops + 1, sizeof(int));
    s.grads = vg__calloc((size_t)s.nops + 1, sizeof(glist *));
    queue = vg__malloc(sizeof(int) * (size_t)(s.nops + 1));
    if (!s.fwd || !s.bwd || !s.pending || !s.grads || !queue) goto oom;
    mark_forward(&s, xs, nxs);
    mark_backward(&s, ys, nys);
    /* between = fwd && bwd; pending = consumers on the path */
    for (int i = 0; i < s.nops; i++) {
        vg_op *op = g->ops[i];
        if (!(s.fwd[i] && s.bwd[i])) continue;
        for (int k = 0; k < op->ninputs; k++) {
            int src = op->inputs[k].op->id;
            if (s.fwd[src] && s.bwd[src]) s.pending[src]++;
        }
    }
    for (int i = 0; i < s.nops; i++) {
        if (!(s.fwd[i] && s.bwd[i]) && !s.bwd[i]) continue;
        int no = g->ops[i]->noutputs;
        s.grads[i] = vg__calloc((size_t)(no ? no : 1), sizeof(glist));
        if (!s.grads[i]) goto oom;
    }
    vg_graph_push_scope(g, "gradients");
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
                    if (!dy[k].op && is_float(op->out_dtypes[k])) dy[k] = vg_zeros_like(g, vg_out(op, k), NULL);
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
                    if (dx[k].op && is_float(vg_output_dtype(in)) && s.grads[src] &&
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
    vg_graph_pop_scope(g);
    vg__free(queue);
    gstate_free(&s);
    if (rc != VG_OK)
        for (int i = 0; i < nxs; i++) dxs[i] = (vg_output){NULL, 0};
    else vg_status_clear(st);
    return rc;
graph_err:
    vg_graph_pop_scope(g);
    vg__free(queue);
    gstate_free(&s);
    {
        vg_code c = vg_graph_status(g, st);
        return c != VG_OK ? c : VG_INTERNAL;
    }
oom_pop:
    vg_graph_pop_scope(g);
oom:
    vg__free(queue);
    gstate_free(&s);
    return VG_OOM(st, "gradients");
}
