/*
 * control_flow_ops.c - TF1's control-flow ops (control_flow_ops.cc: Switch, Merge,
 * Enter, Exit, NextIteration, LoopCond, ControlTrigger) and the builders tf.cond,
 * tf.case, tf.while_loop (control_flow_ops.py) over C callbacks.
 *
 * The executor runs these ops itself (exec/cflow.c: frames, iterations, deadness), so
 * their kernels here are NULL. The builders record TF's CondContext / WhileContext as
 * graph user data ("vigil.control_flow", control_flow_internal.h): the op-id range each
 * context was built in, its pivots and its structural ops. When a context is finished,
 * every op built in it that uses a tensor from an enclosing context gets it through a
 * capture (Enter with is_constant for a loop, Switch on the predicate for a cond
 * branch), and ops without any input get a control input from the pivot: what TF's
 * AddValue / AddOp hooks do while the op is created, done here once the callback has
 * returned.
 *
 * Gradients (as control_flow_grad.py): Switch in a cond -> Merge of the two output
 * gradients; Merge in a cond -> Switch of the gradient on the cond's predicate; Exit,
 * NextIteration, Enter inside a while loop are handled by vg_gradients as one region
 * (src/autodiff/gradients.c).
 */
#include "kernels/control/control_flow_internal.h"
#include "kernels/kernel.h"
#include "vigil/ops.h"
#include <stdio.h>

/* ------------------------------------------------------------------------ */
/* context registry */

static void info_destroy(void *p) {
    vg__cf_info *ci = p;
    if (!ci) return;
    for (int i = 0; i < ci->n; i++) {
        vg__cf_ctx *c = &ci->ctx[i];
        vg__free(c->merges);
        vg__free(c->frame_name);
        vg__free(c->enters);
        vg__free(c->stacks);
        vg__free(c->hist_from);
        vg__free(c->hist_to);
        vg__free(c->gcond);
        vg__free(c->gpivot);
    }
    vg__free(ci->ctx);
    vg__free(ci->ctx_of);
    vg__free(ci);
}

vg__cf_info *vg__cf_info_get(vg_graph *g, bool create) {
    vg__cf_info *ci = vg_graph_user_data(g, "vigil.control_flow");
    if (ci || !create) return ci;
    ci = vg__calloc(1, sizeof *ci);
    if (!ci) return NULL;
    ci->cur = -1;
    if (vg_graph_set_user_data(g, "vigil.control_flow", ci, info_destroy) != VG_OK) {
        vg__free(ci);
        return NULL;
    }
    return ci;
}

int vg__cf_ctx_of(const vg__cf_info *ci, const vg_op *op) {
    if (!ci || !op || op->id >= ci->nctx_of) return -1;
    int v = ci->ctx_of[op->id];
    return v > 0 ? v - 1 : -1;
}

bool vg__cf_set_ctx(vg__cf_info *ci, const vg_op *op, int ctx) {
    if (op->id >= ci->nctx_of) {
        if (!vg__grow((void **)&ci->ctx_of, &ci->ctx_of_cap, op->id + 1, sizeof(int))) return false;
        for (int i = ci->nctx_of; i <= op->id; i++) ci->ctx_of[i] = 0;
        ci->nctx_of = op->id + 1;
    }
    ci->ctx_of[op->id] = ctx < 0 ? -1 : ctx + 1;
    return true;
}

static bool assigned(const vg__cf_info *ci, const vg_op *op) {
    return op->id < ci->nctx_of && ci->ctx_of[op->id] != 0;
}

int vg__cf_out_ctx(const vg__cf_info *ci, vg_output o) {
    if (!ci || !o.op) return -1;
    if (strcmp(o.op->def->type, "Enter") == 0) {
        /* the while context whose enters include it */
        for (int i = 0; i < ci->n; i++) {
            const vg__cf_ctx *c = &ci->ctx[i];
            if (c->kind != VG__CTX_WHILE) continue;
            for (int k = 0; k < c->nvars; k++)
                if (c->enters[k] == o.op) return i;
            const char *fn = NULL;
            size_t len = 0;
            if (vg_op_attr_string(o.op, "frame_name", &fn, &len) && c->frame_name &&
                strlen(c->frame_name) == len && memcmp(c->frame_name, fn, len) == 0)
                return i;
        }
    }
    return vg__cf_ctx_of(ci, o.op);
}

int vg__cf_frame_ctx(const vg__cf_info *ci, int ctx) {
    while (ctx >= 0 && ci->ctx[ctx].kind != VG__CTX_WHILE) ctx = ci->ctx[ctx].parent;
    return ctx;
}

bool vg__cf_is_ancestor(const vg__cf_info *ci, int a, int ctx) {
    if (a < 0) return true;
    for (int c = ctx; c >= 0; c = ci->ctx[c].parent)
        if (c == a) return true;
    return false;
}

void vg__cf_set_input(vg_op *op, int i, vg_output in) { op->inputs[i] = in; }

static _Thread_local int grad_forward_pending = -1;

static int ctx_new(vg__cf_info *ci, int kind, int parent, int start) {
    if (!vg__grow((void **)&ci->ctx, &ci->cap, ci->n + 1, sizeof(vg__cf_ctx))) return -1;
    vg__cf_ctx *c = &ci->ctx[ci->n];
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->parent = parent;
    c->start_id = start;
    c->end_id = start;
    c->forward = -1;
    return ci->n++;
}

typedef struct capture {
    vg_output from, to;
} capture;

static vg_code backprop_value(vg_graph *g, vg__cf_info *ci, int a, vg_output x, vg_output *out, vg_status *st);
static vg_code bwd_cond_pivot(vg_graph *g, vg__cf_info *ci, int a, int cc, vg_op **out, vg_status *st);

/* Is x a control input of one of while context c's loop-variable Enters (the control
 * dependencies open when the loop was built: the Enters already wait for them)? */
static bool enters_wait_for(const vg__cf_info *ci, int c, const vg_op *x) {
    const vg__cf_ctx *cx = &ci->ctx[c];
    for (int i = 0; i < cx->nvars; i++)
        for (int k = 0; cx->enters && cx->enters[i] && k < cx->enters[i]->ncontrol; k++)
            if (cx->enters[i]->control[k] == x) return true;
    return false;
}

/* An input that is a loop invariant of while context c: a constant Enter into it, or a
 * ref input from outside the loop (TF captures those through a constant RefEnter). */
static bool loop_invariant(const vg__cf_info *ci, int c, const vg_op *op, int k) {
    vg_output in = op->inputs[k];
    if (k < 32 && ((op->def->ref_inputs >> k) & 1)) return !vg__cf_is_ancestor(ci, c, vg__cf_out_ctx(ci, in)) ||
                                                             vg__cf_out_ctx(ci, in) < 0;
    bool cst = false;
    return strcmp(in.op->def->type, "Enter") == 0 && vg_op_attr_bool(in.op, "is_constant", &cst) && cst;
}

/* The control context of op x for _RemoveExternalControlEdges: an Exit's is outside
 * its loop (TF's util.GetOutputContext). The builders record an Exit in its loop's
 * parent context already (going one more level up read ci->ctx[-1] for a loop in a
 * cond branch: testWhileGradInCond). */
static int control_ctx(const vg__cf_info *ci, const vg_op *x) {
    int cc = vg__cf_ctx_of(ci, x);
    if (cc >= 0 && strcmp(x->def->type, "Exit") == 0 && x->ninputs == 1 && vg__cf_out_ctx(ci, x->inputs[0]) == cc)
        cc = ci->ctx[cc].parent;
    return cc;
}

/* TF's WhileContext._AddOpInternal pulls an external control input x into the loop as a
 * data input: identity(x:0), an op of the loop with the section's pivot as control.
 * For an x without outputs (TF drops those: a known gap) a Const with a control input
 * from x is made outside first, so the order holds. */
static vg_op *pull_control(vg_graph *g, vg__cf_info *ci, int c, vg_op *x, vg_op *pivot, vg_status *st) {
    vg_output src = {NULL, 0};
    if (x->noutputs > 0) {
        src = vg_out(x, 0);
    } else {
        src = vg_const_bool(g, true, "control_dependency");
        if (!src.op) return NULL;
        src.op->ncontrol = 0;
        if (vg_op_add_control_input(src.op, x) != VG_OK || !vg__cf_set_ctx(ci, src.op, vg__cf_ctx_of(ci, x))) {
            VG_OOM(st, "control flow");
            return NULL;
        }
    }
    vg_output id = vg_identity(g, src, NULL);
    if (!id.op) return NULL;
    id.op->ncontrol = 0;
    if (!vg__cf_set_ctx(ci, id.op, c) || (pivot && vg_op_add_control_input(id.op, pivot) != VG_OK)) {
        VG_OOM(st, "control flow");
        return NULL;
    }
    return id.op;
}

/* Finishes context c: assigns its ops, captures outer tensors, fixes control edges as
 * TF's ControlFlowContext.AddOp does. Ops in [start, pred_end) use pred_pivot (a
 * while's condition), later ones pivot.
 *  - Ops made in an init scope (variables, their initializers) belong to no context
 *    (TF's control_dependencies(None) clears it), so a model first built inside a loop
 *    body initializes outside it; an initial value computed inside the context fails as
 *    in TF ("Initializer for variable ... is from inside a control-flow construct").
 *  - While: control inputs from outside the loop are removed; those the loop's Enters do
 *    not already wait for are pulled in as Identity ops of the loop
 *    (_RemoveExternalControlEdges, _AddOpInternal). An op without data inputs and
 *    without a control input inside gets the pivot; so does an op whose inputs are all
 *    loop invariants (_MaybeAddControlDependency), or it would also run in the
 *    iteration where the condition is false.
 *  - Cond: an op of a cond inside a while loop loses control inputs from outside that
 *    loop (TF's CondContext drops them); an op without data inputs and without a control
 *    input inside the branch gets the branch pivot. */
static vg_code finish_ctx(vg_graph *g, vg__cf_info *ci, int c, int pred_end, vg_status *st) {
    int start = ci->ctx[c].start_id, end = g->nops;
    capture *caps = NULL;
    int ncaps = 0, capcap = 0;
    vg_code rc = VG_OK;
    vg_op **ext = NULL;
    int next = 0, extcap = 0;
    for (int id = start; id < end; id++) {
        vg_op *op = g->ops[id];
        if (!assigned(ci, op) && !vg__cf_set_ctx(ci, op, op->outside_cf ? -1 : c)) return VG_OOM(st, "control flow");
    }
    int wctx = vg__cf_frame_ctx(ci, c); /* the enclosing while (c itself for a while) */
    for (int id = start; id < g->nops && rc == VG_OK; id++) {
        vg_op *op = g->ops[id];
        if (op->outside_cf && id < end) {
            /* lifted out: its inputs must come from outside c too */
            for (int k = 0; k < op->ninputs; k++) {
                int oc = vg__cf_out_ctx(ci, op->inputs[k]);
                if (oc >= 0 && vg__cf_is_ancestor(ci, c, oc) && !op->inputs[k].op->outside_cf) {
                    rc = vg_status_set(st, VG_INVALID_ARGUMENT,
                                       "Initializer for variable %s is from inside a control-flow construct, such as "
                                       "a loop or conditional. When creating a variable inside a loop or "
                                       "conditional, use a lambda as the initializer.",
                                       op->name);
                    vg_graph_set_error(g, rc, "%s", st->msg);
                    break;
                }
            }
            continue;
        }
        if (vg__cf_ctx_of(ci, op) != c) continue;
        const vg__cf_ctx *cx = &ci->ctx[c];
        bool is_while = cx->kind == VG__CTX_WHILE;
        vg_op *pivot = (is_while && id < pred_end) ? cx->pred_pivot : cx->pivot;
        /* control inputs: internal ones stay */
        bool inner_ctrl = false;
        next = 0;
        /* an Exit of a loop nested in c runs in that loop's frame: its control inputs
         * from there (the gradient's f_acc_sync) stay */
        int opw = wctx;
        if (!strcmp(op->def->type, "Exit") && op->ninputs == 1)
            opw = vg__cf_frame_ctx(ci, vg__cf_out_ctx(ci, op->inputs[0]));
        for (int k = 0; k < op->ncontrol;) {
            vg_op *x = op->control[k];
            int cc = control_ctx(ci, x);
            bool internal = opw < 0 || (cc >= 0 && vg__cf_frame_ctx(ci, cc) == opw);
            if (!internal) {
                op->control[k] = op->control[--op->ncontrol];
                if (is_while && !enters_wait_for(ci, c, x)) {
                    if (!vg__grow((void **)&ext, &extcap, next + 1, sizeof(vg_op *))) { rc = VG_OOM(st, "control flow"); break; }
                    ext[next++] = x;
                }
                continue;
            }
            inner_ctrl |= cc >= 0 && vg__cf_is_ancestor(ci, c, cc);
            k++;
        }
        if (rc != VG_OK) break;
        if (op->ninputs == 0) {
            if (!inner_ctrl && pivot && op != pivot && vg_op_add_control_input(op, pivot) != VG_OK)
                rc = VG_OOM(st, "control flow");
        } else {
            for (int k = 0; k < op->ninputs && rc == VG_OK; k++) {
                if (k < 32 && ((op->def->ref_inputs >> k) & 1)) continue;
                vg_output in = op->inputs[k];
                int oc = vg__cf_out_ctx(ci, in);
                if (oc != c && !vg__cf_is_ancestor(ci, oc, c)) {
                    /* a forward loop's value used in its gradient loop: saved and popped */
                    int a = c;
                    while (a >= 0 && !(ci->ctx[a].kind == VG__CTX_WHILE && ci->ctx[a].forward >= 0 &&
                                       vg__cf_is_ancestor(ci, ci->ctx[a].forward, oc)))
                        a = ci->ctx[a].parent;
                    if (a < 0) {
                        /* TF's CheckInputFromValidContext: a value of a while loop may only
                         * be used in that loop or in contexts nested in it (a cond's value
                         * may be used anywhere: it is dead when its branch is not taken);
                         * test_cf_tf_while.c testInvalidContextIn* */
                        int iw = vg__cf_frame_ctx(ci, oc);
                        bool enter_or_switch = !strcmp(op->def->type, "Enter") || !strcmp(op->def->type, "Switch");
                        bool is_exit = !strcmp(op->def->type, "Exit"); /* in TF it is in its loop's context */
                        if (iw >= 0 && !is_exit && !vg__cf_is_ancestor(ci, iw, wctx) &&
                            !(wctx < 0 && enter_or_switch)) {
                            vg_status es;
                            if (wctx >= 0)
                                rc = vg_status_set(&es, VG_INVALID_ARGUMENT,
                                                   "Cannot use '%s' as input to '%s' because they are in different "
                                                   "while loops. See info log for more details.",
                                                   in.op->name, op->name);
                            else
                                rc = vg_status_set(&es, VG_INVALID_ARGUMENT,
                                                   "Cannot use '%s' as input to '%s' because '%s' is in a while loop. "
                                                   "See info log for more details.",
                                                   in.op->name, op->name, in.op->name);
                            vg_graph_set_error(g, rc, "%s", es.msg); /* outer builders report it too */
                            vg_status_copy(st, &es);
                            break;
                        }
                        /* a value of a context that does not enclose c but whose frame
                         * encloses c's (a cond branch around the forward loop whose
                         * gradient loop this is: testCondWithTensorArrayGrad) enters a
                         * loop as a capture; in the same frame it is used as it is */
                        if (is_exit || !is_while || iw == wctx) continue;
                    } else {
                        vg_output pop;
                        rc = backprop_value(g, ci, a, in, &pop, st);
                        if (rc != VG_OK) break;
                        vg__cf_set_input(op, k, pop);
                        in = pop;
                        oc = a;
                        if (a == c) continue;
                    }
                }
                if (oc == c || (!is_while && in.op == cx->pivot)) continue; /* a cond's pivot is one of its values */
                vg_output rep = {NULL, 0};
                for (int q = 0; q < ncaps; q++)
                    if (caps[q].from.op == in.op && caps[q].from.index == in.index) rep = caps[q].to;
                if (!rep.op) {
                    cx = &ci->ctx[c];
                    if (cx->kind == VG__CTX_WHILE) {
                        rep = vg_enter(g, in, cx->frame_name, true, cx->parallel_iterations, "Enter");
                    } else {
                        vg_op *sw = vg_switch(g, in, cx->pred, "Switch");
                        rep = vg_out(sw, cx->branch);
                    }
                    if (!rep.op) { rc = vg_graph_status(g, st); break; }
                    rep.op->ncontrol = 0; /* TF makes captures under control_dependencies(None) */
                    if (!vg__cf_set_ctx(ci, rep.op, ci->ctx[c].parent) ||
                        !vg__grow((void **)&caps, &capcap, ncaps + 1, sizeof(capture))) {
                        rc = VG_OOM(st, "control flow");
                        break;
                    }
                    caps[ncaps++] = (capture){in, rep};
                }
                vg__cf_set_input(op, k, rep);
            }
            if (rc != VG_OK) break;
            /* _MaybeAddControlDependency */
            if (is_while && op->ncontrol == 0 && pivot && op != pivot) {
                bool free_op = true;
                for (int k = 0; k < op->ninputs && free_op; k++) free_op = loop_invariant(ci, c, op, k);
                if (free_op && vg_op_add_control_input(op, pivot) != VG_OK) rc = VG_OOM(st, "control flow");
            }
        }
        for (int q = 0; q < next && rc == VG_OK; q++) {
            vg_op *idop = pull_control(g, ci, c, ext[q], pivot, st);
            if (!idop) rc = st && st->code ? st->code : vg_graph_status(g, st);
            else if (vg_op_add_control_input(op, idop) != VG_OK) rc = VG_OOM(st, "control flow");
        }
    }
    vg__free(caps);
    vg__free(ext);
    ci->ctx[c].end_id = g->nops;
    return rc;
}

/* ------------------------------------------------------------------------ */
/* ops */

static vg_code shape_switch(vg_op *op, vg_status *st) {
    vg_dtype pt = vg__op_input_dtype(op, 1);
    vg_shape ps = vg__op_input_shape(op, 1);
    if (pt != VG_BOOL || ps.ndims > 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Switch: pred must be a scalar bool");
    vg_dtype dt = vg__op_input_dtype(op, 0);
    vg_shape s = vg__op_input_shape(op, 0);
    vg__op_set_default_attr_type(op, "T", dt);
    return vg__op_set_two_outputs(op, dt, s, dt, s);
}

static vg_code shape_merge(vg_op *op, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, 0);
    vg_shape s = vg__op_input_shape(op, 0);
    for (int i = 1; i < op->ninputs; i++) {
        if (vg__op_input_dtype(op, i) != dt)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Merge: input %d has dtype %s, input 0 %s", i,
                                 vg_dtype_name(vg__op_input_dtype(op, i)), vg_dtype_name(dt));
        vg_shape o = vg__op_input_shape(op, i);
        if (s.ndims < 0) continue;
        if (o.ndims != s.ndims) {
            s = vg_shape_unknown();
            continue;
        }
        for (int d = 0; d < s.ndims; d++)
            if (s.dims[d] != o.dims[d]) s.dims[d] = -1;
    }
    vg__op_set_default_attr_type(op, "T", dt);
    vg__op_set_default_attr_int(op, "N", op->ninputs);
    return vg__op_set_two_outputs(op, dt, s, VG_INT32, vg_shape_make(NULL, 0));
}

static vg_code shape_forward(vg_op *op, vg_status *st) {
    (void)st;
    vg_dtype dt = vg__op_input_dtype(op, 0);
    vg__op_set_default_attr_type(op, "T", dt);
    vg_shape s = vg__op_input_shape(op, 0);
    if (strcmp(op->def->type, "Enter") == 0) {
        vg__op_set_default_attr_bool(op, "is_constant", false);
        vg__op_set_default_attr_int(op, "parallel_iterations", 10);
        /* TF's Enter shape function: the input's shape only for a constant Enter (a
         * loop variable's Enter gets its shape invariant from the while builder);
         * testEnterShapePropagation in test_cf_tf_while.c */
        bool cst = false;
        if (!vg_op_attr_bool(op, "is_constant", &cst) || !cst) s = vg_shape_unknown();
    }
    return vg__op_set_single_output(op, dt, s);
}

static vg_code shape_loop_cond(vg_op *op, vg_status *st) {
    vg_shape s = vg__op_input_shape(op, 0);
    if (vg__op_input_dtype(op, 0) != VG_BOOL || s.ndims > 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "LoopCond: input must be a scalar bool");
    return vg__op_set_single_output(op, VG_BOOL, vg_shape_make(NULL, 0));
}

static vg_code shape_trigger(vg_op *op, vg_status *st) {
    (void)st;
    return vg__op_set_no_outputs(op);
}

/* The cond context whose Merge this is (-1 if none). */
static int merge_cond(const vg__cf_info *ci, const vg_op *op) {
    for (int i = 0; ci && i < ci->n; i++)
        for (int k = 0; k < ci->ctx[i].nmerges; k++)
            if (ci->ctx[i].merges[k] == op) return i;
    return -1;
}

/* _SwitchGrad for a cond: the gradient is the merge of the two branch gradients. */
static vg_code grad_switch(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output in[2] = {dy[0], dy[1]};
    dx[0] = dx[1] = vg_out(NULL, 0);
    if (!in[0].op && !in[1].op) return VG_OK;
    if (!in[0].op || !in[1].op) {
        /* no zeros for the other side (a resource handle's Switch: TF's
         * cond_resource_grad merges the one gradient with itself; testCondResourceGradShape) */
        if (vg_output_dtype(op->inputs[0]) != VG_RESOURCE) return VG_OK;
        in[0] = in[1] = in[0].op ? in[0] : in[1];
        dx[0] = vg_out(vg_merge(g, in, 2, "cond_resource_grad"), 0);
        return vg_graph_status(g, NULL);
    }
    vg_op *m = vg_merge(g, in, 2, NULL);
    dx[0] = vg_out(m, 0);
    return vg_graph_status(g, NULL);
}

/* _MergeGrad for a cond: Switch(grad, pred); input i gets output i. */
static vg_code grad_merge(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg__cf_info *ci = vg__cf_info_get(g, false);
    int c = merge_cond(ci, op);
    if (c < 0 || op->ninputs != 2)
        return vg_graph_set_error(g, VG_UNIMPLEMENTED,
                                  "gradient of Merge '%s': only the Merges of vg_cond are differentiable here",
                                  op->name);
    vg_op *sw = vg_switch(g, dy[0], ci->ctx[c].pred, NULL);
    dx[0] = vg_out(sw, 0);
    dx[1] = vg_out(sw, 1);
    return vg_graph_status(g, NULL);
}

static vg_code grad_identity_like(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    (void)g;
    (void)op;
    dx[0] = dy[0];
    return VG_OK;
}

const vg__op_def vg__ops_control_flow[] = {
    {"Switch", 2, 2, 0, 0, shape_switch, NULL, grad_switch},
    {"Merge", 1, -1, 0, 0, shape_merge, NULL, grad_merge},
    {"Enter", 1, 1, 0, 0, shape_forward, NULL, grad_identity_like},
    {"Exit", 1, 1, 0, 0, shape_forward, NULL, grad_identity_like},
    {"NextIteration", 1, 1, 0, 0, shape_forward, NULL, grad_identity_like},
    {"LoopCond", 1, 1, VG__OP_NOT_DIFFERENTIABLE, 0, shape_loop_cond, NULL, NULL},
    {"ControlTrigger", 0, 0, VG__OP_NOT_DIFFERENTIABLE, 0, shape_trigger, NULL, NULL},
    {0},
};

/* ------------------------------------------------------------------------ */
/* primitive builders */

vg_op *vg_switch(vg_graph *g, vg_output data, vg_output pred, const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, "Switch", name, "Switch", (vg_output[]){data, pred}, 2);
    return vg_op_builder_finish(b);
}

vg_op *vg_merge(vg_graph *g, const vg_output *inputs, int n, const char *name) {
    if (n < 1 || !inputs) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "merge: needs at least one input");
        return NULL;
    }
    vg_op_builder *b = vg_op_builder_new(g, "Merge", name ? name : "Merge");
    vg_op_builder_add_inputs(b, inputs, n);
    return vg_op_builder_finish(b);
}

vg_output vg_enter(vg_graph *g, vg_output data, const char *frame_name, bool is_constant, int parallel_iterations,
                   const char *name) {
    if (!frame_name || !*frame_name) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "enter: empty frame_name");
        return vg_out(NULL, 0);
    }
    vg_op_builder *b = vg__builder_with_inputs(g, "Enter", name, "Enter", (vg_output[]){data}, 1);
    vg_op_builder_set_attr_string(b, "frame_name", frame_name, strlen(frame_name));
    vg_op_builder_set_attr_bool(b, "is_constant", is_constant);
    vg_op_builder_set_attr_int(b, "parallel_iterations", parallel_iterations > 0 ? parallel_iterations : 10);
    return vg_out(vg_op_builder_finish(b), 0);
}

static vg_output unary(vg_graph *g, const char *type, vg_output x, const char *name) {
    return vg__build_simple(g, type, name, type, (vg_output[]){x}, 1);
}

vg_output vg_exit(vg_graph *g, vg_output data, const char *name) { return unary(g, "Exit", data, name); }
vg_output vg_next_iteration(vg_graph *g, vg_output data, const char *name) {
    return unary(g, "NextIteration", data, name);
}
vg_output vg_loop_cond(vg_graph *g, vg_output input, const char *name) { return unary(g, "LoopCond", input, name); }
vg_op *vg_control_trigger(vg_graph *g, const char *name) {
    return vg_op_builder_finish(vg_op_builder_new(g, "ControlTrigger", name ? name : "ControlTrigger"));
}

/* ------------------------------------------------------------------------ */
/* tf.cond */

static vg_code fail_graph(vg_graph *g, vg_status *st, vg_code rc) {
    if (rc == VG_OK || g->err.code != VG_OK) {
        vg_code c = vg_graph_status(g, st);
        if (c != VG_OK) return c;
    }
    return rc != VG_OK ? rc : VG_INTERNAL;
}

static vg_code build_branch(vg_graph *g, vg__cf_info *ci, int c, vg_cond_branch_fn fn, void *user, int nouts,
                            vg_output *res, vg_status *st) {
    int prev = ci->cur;
    ci->cur = c;
    for (int i = 0; i < nouts; i++) res[i] = vg_out(NULL, 0);
    vg_status cst;
    vg_status_clear(&cst);
    vg_code rc = fn(g, user, res);
    if (rc == VG_OK && g->err.code != VG_OK) rc = g->err.code;
    if (rc != VG_OK) {
        ci->cur = prev;
        if (g->err.code != VG_OK) return vg_graph_status(g, st);
        return vg_status_set(st, rc, "cond branch callback failed");
    }
    for (int i = 0; i < nouts; i++) {
        if (!res[i].op) {
            ci->cur = prev;
            return vg_status_set(st, VG_INVALID_ARGUMENT, "cond branch did not set output %d", i);
        }
        if (res[i].index < 0 || res[i].index >= res[i].op->noutputs) {
            /* an op (TF's _BuildCondTensor): the pivot, with a control dependency on it */
            vg_op *dep = res[i].op;
            vg_graph_push_control_deps(g, &dep, 1);
            res[i] = vg_identity(g, vg_out(ci->ctx[c].pivot, 0), "control_dependency");
            vg_graph_pop_control_deps(g);
            if (!res[i].op) {
                ci->cur = prev;
                return vg_graph_status(g, st);
            }
        } else if (res[i].op->id < ci->ctx[c].start_id) {
            /* an output built outside the branch is brought in (TF's _BuildCondTensor) */
            res[i] = vg_identity(g, res[i], NULL);
        }
    }
    rc = finish_ctx(g, ci, c, 0, st);
    ci->cur = prev;
    if (rc == VG_OK && g->err.code != VG_OK) rc = vg_graph_status(g, st);
    return rc;
}

/* The end of vg_cond / vg_while_loop: closes their name scope and frees their scratch
 * mem; on failure (rc) clears outs[0..n), on success st. Returns rc. */
static vg_code cf_build_end(vg_graph *g, void *mem, vg_code rc, vg_output *outs, int n, vg_status *st) {
    vg_graph_pop_scope(g);
    vg__free(mem);
    if (rc != VG_OK)
        for (int i = 0; i < n; i++) outs[i] = vg_out(NULL, 0);
    else vg_status_clear(st);
    return rc;
}

/* Opens the cond context of one branch (branch 1: true, 0: false) under context parent,
 * guarded by pred_id pid and pivot, into *c, and builds fn's nouts outputs into res. */
static vg_code cond_branch(vg_graph *g, vg__cf_info *ci, int parent, vg_output pid, int branch, vg_op *pivot,
                           vg_cond_branch_fn fn, void *user, int nouts, vg_output *res, int *c, vg_status *st) {
    *c = ctx_new(ci, VG__CTX_COND, parent, g->nops);
    if (*c < 0) return VG_OOM(st, "cond");
    ci->ctx[*c].pred = pid;
    ci->ctx[*c].branch = branch;
    ci->ctx[*c].pivot = pivot;
    return build_branch(g, ci, *c, fn, user, nouts, res, st);
}

vg_code vg_cond(vg_graph *g, vg_output pred, vg_cond_branch_fn true_fn, vg_cond_branch_fn false_fn, void *user,
                int nouts, vg_output *outs, const char *name, vg_status *st) {
    if (!g) return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_cond: NULL graph");
    if (nouts < 1 || !outs || !true_fn || !false_fn || !pred.op)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_cond: NULL pred, fn or outs, or nouts < 1 (%d)", nouts);
    for (int i = 0; i < nouts; i++) outs[i] = vg_out(NULL, 0);
    if (vg_graph_status(g, st) != VG_OK) return st ? st->code : g->err.code;
    vg_shape ps = vg_output_shape(pred);
    if (vg_output_dtype(pred) != VG_BOOL || ps.ndims > 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_cond: pred '%s' must be a scalar bool", pred.op->name);
    vg__cf_info *ci = vg__cf_info_get(g, true);
    if (!ci) return VG_OOM(st, "control flow info");
    vg_output *res = vg__calloc((size_t)nouts * 2, sizeof(vg_output));
    if (!res) return VG_OOM(st, "cond");
    vg_output *rt = res, *rf = res + nouts;
    vg_code rc = VG_OK;
    vg_graph_push_scope(g, name ? name : "cond");
    vg_op *sw = vg_switch(g, pred, pred, "Switch");
    vg_output st_ = vg_identity(g, vg_out(sw, 1), "switch_t");
    vg_output sf_ = vg_identity(g, vg_out(sw, 0), "switch_f");
    vg_output pid = vg_identity(g, pred, "pred_id");
    int parent = ci->cur;
    int ct = -1, cfx = -1;
    if (!pid.op || !st_.op || !sf_.op) {
        rc = fail_graph(g, st, VG_OK);
        goto done;
    }
    rc = cond_branch(g, ci, parent, pid, 1, st_.op, true_fn, user, nouts, rt, &ct, st);
    if (rc != VG_OK) goto done;
    rc = cond_branch(g, ci, parent, pid, 0, sf_.op, false_fn, user, nouts, rf, &cfx, st);
    if (rc != VG_OK) goto done;
    ci->ctx[ct].merges = vg__calloc((size_t)nouts, sizeof(vg_op *));
    if (!ci->ctx[ct].merges) { rc = VG_OOM(st, "cond"); goto done; }
    for (int i = 0; i < nouts; i++) {
        if (vg_output_dtype(rt[i]) != vg_output_dtype(rf[i])) {
            rc = vg_status_set(st, VG_INVALID_ARGUMENT,
                               "vg_cond: output %d has dtype %s in the true branch and %s in the false branch", i,
                               vg_dtype_name(vg_output_dtype(rt[i])), vg_dtype_name(vg_output_dtype(rf[i])));
            goto done;
        }
        vg_output in[2] = {rf[i], rt[i]};
        vg_op *m = vg_merge(g, in, 2, "Merge");
        if (!m) { rc = fail_graph(g, st, VG_OK); goto done; }
        ci->ctx[ct].merges[ci->ctx[ct].nmerges++] = m;
        outs[i] = vg_out(m, 0);
    }
done:
    return cf_build_end(g, res, rc, outs, nouts, st);
}

/* ------------------------------------------------------------------------ */
/* tf.case: nested conds */

typedef struct case_state {
    const vg_output *preds;
    const vg_cond_branch_fn *fns;
    void *const *users;
    int n, at;
    vg_cond_branch_fn default_fn;
    void *default_user;
    int nouts;
    vg_status *st;
} case_state;

static vg_code case_true(vg_graph *g, void *user, vg_output *outs) {
    case_state *cs = user;
    return cs->fns[cs->at](g, cs->users ? cs->users[cs->at] : NULL, outs);
}

static vg_code case_false(vg_graph *g, void *user, vg_output *outs) {
    case_state *cs = user;
    if (cs->at + 1 >= cs->n) return cs->default_fn(g, cs->default_user, outs);
    case_state next = *cs;
    next.at++;
    return vg_cond(g, cs->preds[next.at], case_true, case_false, &next, cs->nouts, outs, "cond", cs->st);
}

vg_code vg_case(vg_graph *g, const vg_output *preds, const vg_cond_branch_fn *fns, void *const *users, int n,
                vg_cond_branch_fn default_fn, void *default_user, int nouts, vg_output *outs, const char *name,
                vg_status *st) {
    if (!g || n < 1 || !preds || !fns || !default_fn || !outs || nouts < 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_case: NULL argument, n < 1 or nouts < 1");
    for (int i = 0; i < n; i++)
        if (!fns[i]) return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_case: fns[%d] is NULL", i);
    case_state cs = {preds, fns, users, n, 0, default_fn, default_user, nouts, st};
    vg_graph_push_scope(g, name ? name : "case");
    vg_code rc = vg_cond(g, preds[0], case_true, case_false, &cs, nouts, outs, "cond", st);
    vg_graph_pop_scope(g);
    return rc;
}

vg_code vg_case_exclusive(vg_graph *g, const vg_output *preds, const vg_cond_branch_fn *fns, void *const *users,
                          int n, vg_cond_branch_fn default_fn, void *default_user, int nouts, vg_output *outs,
                          const char *name, vg_status *st) {
    if (!g || n < 1 || !preds || !fns || !default_fn || !outs || nouts < 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_case_exclusive: NULL argument, n < 1 or nouts < 1");
    for (int i = 0; i < n; i++)
        if (!fns[i] || !preds[i].op)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_case_exclusive: fns[%d] or preds[%d] is NULL", i, i);
    /* TF's _assert_at_most_n_true(preds, n=1) */
    vg_graph_push_scope(g, name ? name : "case");
    const char *scope = vg_graph_scope(g);
    char sc[1100];
    snprintf(sc, sizeof sc, "%s/", scope);
    vg_output pc = vg_pack(g, preds, n, 0, "preds_c");
    vg_output cnt = vg_reduce_sum(g, vg_cast(g, pc, VG_INT32, "Cast"), NULL, -1, false, "num_true_conds");
    vg_output ok = vg_less_equal(g, cnt, vg_const_i32(g, 1, "n_true_conds"), "LessEqual");
    /* TF's error_msg: [string, preds_c], so a failing run names the rule and the
     * predicates ("Input error: exclusive=True: more than 1 conditions (Less:0,
     * Less_1:0) evaluated as True:"; testCase in test_cf_tf_cond.c) */
    char msg[2048];
    size_t pos = (size_t)snprintf(msg, sizeof msg, "Input error: exclusive=True: more than 1 conditions (");
    for (int i = 0; i < n && pos < sizeof msg; i++)
        pos += (size_t)snprintf(msg + pos, sizeof msg - pos, "%s%s:%d", i ? ", " : "", preds[i].op->name,
                                preds[i].index);
    if (pos < sizeof msg) snprintf(msg + pos, sizeof msg - pos, ") evaluated as True:");
    vg_output data[2] = {vg_const_string(g, msg, NULL), pc};
    vg_op *as = vg_assert(g, ok, data, 2, n, "Assert");
    vg_code rc = VG_OK;
    if (!as) {
        rc = fail_graph(g, st, VG_OK);
    } else {
        vg_graph_push_control_deps(g, &as, 1);
        case_state cs = {preds, fns, users, n, 0, default_fn, default_user, nouts, st};
        rc = vg_cond(g, preds[0], case_true, case_false, &cs, nouts, outs, "cond", st);
        vg_graph_pop_control_deps(g);
    }
    vg_graph_pop_scope(g);
    (void)sc;
    return rc;
}

/* ------------------------------------------------------------------------ */
/* tf.while_loop */

typedef struct maxit_state {
    vg_while_cond_fn cond;
    vg_while_body_fn body;
    void *user;
    vg_output max;
} maxit_state;

static vg_code maxit_cond(vg_graph *g, const vg_output *v, int n, void *user, vg_output *pred) {
    maxit_state *m = user;
    vg_output c;
    vg_code rc = m->cond(g, v + 1, n - 1, m->user, &c);
    if (rc != VG_OK) return rc;
    *pred = vg_logical_and(g, vg_less(g, v[0], m->max, NULL), c, NULL);
    return VG_OK;
}

static vg_code maxit_body(vg_graph *g, const vg_output *v, int n, void *user, vg_output *outs) {
    maxit_state *m = user;
    vg_output one = vg_dtype_size(vg_output_dtype(v[0])) == 8 ? vg_cast(g, vg_const_i32(g, 1, NULL), VG_INT64, NULL)
                                                                : vg_const_i32(g, 1, NULL);
    outs[0] = vg_add(g, v[0], one, NULL);
    return m->body(g, v + 1, n - 1, m->user, outs + 1);
}

vg_code vg_while_loop(vg_graph *g, vg_while_cond_fn cond_fn, vg_while_body_fn body_fn, void *user,
                      const vg_output *loop_vars, int n, const vg_shape *shape_invariants, int parallel_iterations,
                      vg_output maximum_iterations, const char *name, vg_output *outs, vg_status *st) {
    if (!g) return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_while_loop: NULL graph");
    if (n < 1 || !loop_vars || !outs || !cond_fn || !body_fn)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "vg_while_loop: NULL cond_fn, body_fn, loop_vars or outs, or no loop variables (%d)", n);
    for (int i = 0; i < n; i++) outs[i] = vg_out(NULL, 0);
    for (int i = 0; i < n; i++)
        if (!loop_vars[i].op) return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_while_loop: loop_vars[%d] is NULL", i);
    if (vg_graph_status(g, st) != VG_OK) return st ? st->code : g->err.code;
    if (parallel_iterations <= 0) parallel_iterations = 10;
    if (maximum_iterations.op) {
        vg_dtype mt = vg_output_dtype(maximum_iterations);
        vg_shape ms = vg_output_shape(maximum_iterations);
        if ((mt != VG_INT32 && mt != VG_INT64) || ms.ndims > 0)
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "vg_while_loop: maximum_iterations must be an int32/int64 scalar");
        maxit_state m = {cond_fn, body_fn, user, maximum_iterations};
        vg_output *lv = vg__calloc((size_t)n + 1, sizeof(vg_output));
        vg_output *ov = vg__calloc((size_t)n + 1, sizeof(vg_output));
        vg_shape *inv = shape_invariants ? vg__calloc((size_t)n + 1, sizeof(vg_shape)) : NULL;
        if (!lv || !ov || (shape_invariants && !inv)) {
            vg__free(lv);
            vg__free(ov);
            vg__free(inv);
            return VG_OOM(st, "while_loop");
        }
        vg_graph_push_scope(g, name ? name : "while");
        const char *scope = vg_graph_scope(g);
        char sc[1024];
        snprintf(sc, sizeof sc, "%s/", scope);
        lv[0] = mt == VG_INT64 ? vg_cast(g, vg_const_i32(g, 0, "iteration_counter"), VG_INT64, NULL)
                               : vg_const_i32(g, 0, "iteration_counter");
        for (int i = 0; i < n; i++) lv[i + 1] = loop_vars[i];
        if (inv) {
            inv[0] = vg_shape_make(NULL, 0);
            for (int i = 0; i < n; i++) inv[i + 1] = shape_invariants[i];
        }
        vg_code rc = vg_while_loop(g, maxit_cond, maxit_body, &m, lv, n + 1, inv, parallel_iterations,
                                   vg_out(NULL, 0), sc, ov, st);
        vg_graph_pop_scope(g);
        for (int i = 0; rc == VG_OK && i < n; i++) outs[i] = ov[i + 1];
        vg__free(lv);
        vg__free(ov);
        vg__free(inv);
        return rc;
    }
    vg__cf_info *ci = vg__cf_info_get(g, true);
    if (!ci) return VG_OOM(st, "control flow info");
    vg_code rc = VG_OK;
    vg_output *mem = vg__calloc((size_t)n * 3 + 1, sizeof(vg_output));
    vg_op **ops = vg__calloc((size_t)n * 6 + 1, sizeof(vg_op *));
    if (!mem || !ops) {
        vg__free(mem);
        vg__free(ops);
        return VG_OOM(st, "while_loop");
    }
    vg_output *mv = mem, *iv = mem + n, *bo = mem + 2 * n;
    int parent = ci->cur;
    vg_graph_push_scope(g, name ? name : "while");
    char frame[1100];
    snprintf(frame, sizeof frame, "%s/while_context", vg_graph_scope(g));
    int c = ctx_new(ci, VG__CTX_WHILE, parent, g->nops);
    if (c < 0) {
        vg__free(mem);
        vg__free(ops);
        vg_graph_pop_scope(g);
        return VG_OOM(st, "while_loop");
    }
    vg__cf_ctx *cx = &ci->ctx[c];
    cx->forward = grad_forward_pending;
    grad_forward_pending = -1;
    cx->frame_name = vg__strdup(frame);
    cx->parallel_iterations = parallel_iterations;
    cx->nvars = n;
    cx->enters = ops;
    cx->merge_ops = ops + n;
    cx->switches = ops + 2 * n;
    cx->identities = ops + 3 * n;
    cx->nexts = ops + 4 * n;
    cx->exits = ops + 5 * n;
    if (!cx->frame_name) { rc = VG_OOM(st, "while_loop"); goto done; }
    ci->cur = c;
    for (int i = 0; i < n; i++) {
        vg_output e = vg_enter(g, loop_vars[i], frame, false, parallel_iterations, "Enter");
        if (!e.op) { rc = fail_graph(g, st, VG_OK); goto done; }
        ci->ctx[c].enters[i] = e.op;
        if (shape_invariants) {
            vg_shape in = vg_output_shape(loop_vars[i]);
            if (!vg__shapes_compatible(&in, &shape_invariants[i])) {
                rc = vg__status_two_shapes(st,
                                           "The shape invariant specified for %s is not compatible with the initial "
                                           "shape of the loop variable. It enters the loop with shape %s, but the "
                                           "specified shape invariant is %s.",
                                           loop_vars[i].op->name, &in, &shape_invariants[i]);
                goto done;
            }
            e.op->out_shapes[0] = shape_invariants[i];
        } else {
            /* TF's _SetShapeInvariants: without invariants each variable keeps its
             * entry shape (the Enter's own shape function leaves it unknown) */
            e.op->out_shapes[0] = vg_output_shape(loop_vars[i]);
        }
        if (!vg__cf_set_ctx(ci, e.op, parent)) { rc = VG_OOM(st, "while_loop"); goto done; }
    }
    for (int i = 0; i < n; i++) {
        vg_output in[2] = {vg_out(ci->ctx[c].enters[i], 0), vg_out(ci->ctx[c].enters[i], 0)};
        vg_op *m = vg_merge(g, in, 2, "Merge");
        if (!m) { rc = fail_graph(g, st, VG_OK); goto done; }
        ci->ctx[c].merge_ops[i] = m;
        mv[i] = vg_out(m, 0);
    }
    ci->ctx[c].pred_pivot = ci->ctx[c].merge_ops[0];
    vg_output pred = {NULL, 0};
    rc = cond_fn(g, mv, n, user, &pred);
    if (rc == VG_OK && g->err.code != VG_OK) rc = g->err.code;
    if (rc != VG_OK) { rc = g->err.code ? vg_graph_status(g, st) : vg_status_set(st, rc, "while_loop: cond_fn failed"); goto done; }
    if (!pred.op || vg_output_dtype(pred) != VG_BOOL || vg_output_shape(pred).ndims > 0) {
        rc = vg_status_set(st, VG_INVALID_ARGUMENT, "vg_while_loop: the condition must be a scalar bool");
        goto done;
    }
    int pred_end = g->nops;
    vg_output lc = vg_loop_cond(g, pred, "LoopCond");
    if (!lc.op) { rc = fail_graph(g, st, VG_OK); goto done; }
    ci->ctx[c].loop_cond = lc.op;
    for (int i = 0; i < n; i++) {
        vg_op *sw = vg_switch(g, mv[i], lc, "Switch");
        if (!sw) { rc = fail_graph(g, st, VG_OK); goto done; }
        ci->ctx[c].switches[i] = sw;
    }
    for (int i = 0; i < n; i++) {
        iv[i] = vg_identity(g, vg_out(ci->ctx[c].switches[i], 1), "Identity");
        if (!iv[i].op) { rc = fail_graph(g, st, VG_OK); goto done; }
        ci->ctx[c].identities[i] = iv[i].op;
    }
    ci->ctx[c].pivot = iv[0].op;
    rc = body_fn(g, iv, n, user, bo);
    if (rc == VG_OK && g->err.code != VG_OK) rc = g->err.code;
    if (rc != VG_OK) { rc = g->err.code ? vg_graph_status(g, st) : vg_status_set(st, rc, "while_loop: body_fn failed"); goto done; }
    for (int i = 0; i < n; i++) {
        if (!bo[i].op) { rc = vg_status_set(st, VG_INVALID_ARGUMENT, "while_loop: the body did not set output %d", i); goto done; }
        if (vg_output_dtype(bo[i]) != vg_output_dtype(loop_vars[i])) {
            rc = vg_status_set(st, VG_INVALID_ARGUMENT,
                               "Input tensor '%s' enters the loop with dtype %s, but the body returns dtype %s",
                               loop_vars[i].op->name, vg_dtype_name(vg_output_dtype(loop_vars[i])),
                               vg_dtype_name(vg_output_dtype(bo[i])));
            goto done;
        }
        vg_shape want = vg_output_shape(mv[i]), got = vg_output_shape(bo[i]);
        /* TF builds a gradient loop's back edges without enforcing the shape invariants
         * (_AddNextAndBackEdge(..., enforce_shape_invariant=False)): a gradient may leave
         * the body with less static shape than it entered, e.g. [?, 32] -> [?, ?] when
         * the forward loop ran on a batch known only at run time */
        bool grad_loop = ci->ctx[c].forward >= 0;
        bool ok = grad_loop || want.ndims < 0 || (got.ndims == want.ndims);
        for (int d = 0; !grad_loop && ok && want.ndims > 0 && d < want.ndims; d++)
            ok = want.dims[d] < 0 || want.dims[d] == got.dims[d];
        if (!ok) {
            rc = vg__status_two_shapes(st,
                                       "Input tensor '%s' enters the loop with shape %s, but has shape %s after one "
                                       "iteration. To allow the shape to vary across iterations, use the "
                                       "`shape_invariants` argument of tf.while_loop to specify a less-specific shape.",
                                       loop_vars[i].op->name, &want, &got);
            goto done;
        }
    }
    for (int i = 0; i < n; i++) {
        vg_output nx = vg_next_iteration(g, bo[i], "NextIteration");
        if (!nx.op) { rc = fail_graph(g, st, VG_OK); goto done; }
        ci->ctx[c].nexts[i] = nx.op;
        vg__cf_set_input(ci->ctx[c].merge_ops[i], 1, nx);
    }
    for (int i = 0; i < n; i++) {
        vg_output ex = vg_exit(g, vg_out(ci->ctx[c].switches[i], 0), "Exit");
        if (!ex.op) { rc = fail_graph(g, st, VG_OK); goto done; }
        ci->ctx[c].exits[i] = ex.op;
        ex.op->ncontrol = 0; /* an Exit runs in the loop's frame: the Enters carry outside control inputs */
        if (!vg__cf_set_ctx(ci, ex.op, parent)) { rc = VG_OOM(st, "while_loop"); goto done; }
        outs[i] = ex;
    }
    rc = finish_ctx(g, ci, c, pred_end, st);
done:
    ci->cur = parent;
    return cf_build_end(g, mem, rc, outs, n, st);
}

/* ------------------------------------------------------------------------ */
/* gradient support */

/* An op built after its context was finished: its context, and a control input from
 * the context's pivot when it has no inputs. */
static bool place(vg__cf_info *ci, vg_op *op, int ctx) {
    if (!op || !vg__cf_set_ctx(ci, op, ctx)) return false;
    /* as finish_ctx: control inputs pushed by the caller do not cross into a frame */
    if (strcmp(op->def->type, "Exit") == 0) op->ncontrol = 0;
    bool inner = false;
    for (int k = 0; ctx >= 0 && k < op->ncontrol;) {
        int cc = vg__cf_ctx_of(ci, op->control[k]);
        bool inside = cc >= 0 && vg__cf_is_ancestor(ci, ctx, cc);
        /* a while context, or a cond inside one, drops control inputs from outside its
         * frame (TF's _RemoveExternalControlEdges) */
        int fr = vg__cf_frame_ctx(ci, ctx);
        bool external = !inside && (ci->ctx[ctx].kind == VG__CTX_WHILE || (fr >= 0 && vg__cf_frame_ctx(ci, cc) != fr));
        if (external) {
            op->control[k] = op->control[--op->ncontrol];
            continue;
        }
        inner |= inside;
        k++;
    }
    if (ctx >= 0 && op->ninputs == 0 && !inner && ci->ctx[ctx].pivot)
        return vg_op_add_control_input(op, ci->ctx[ctx].pivot) == VG_OK;
    return true;
}

vg_code vg__cf_forward_count(vg_graph *g, vg__cf_info *ci, int c, vg_output *count, vg_status *st) {
    if (ci->ctx[c].fwd_count.op) {
        *count = ci->ctx[c].fwd_count;
        return VG_OK;
    }
    int p = ci->ctx[c].parent;
    /* parallel_iterations 1: pushes happen in iteration order */
    for (int i = 0; i < g->nops; i++) {
        vg_op *op = g->ops[i];
        if (strcmp(op->def->type, "Enter") != 0 || vg__cf_out_ctx(ci, vg_out(op, 0)) != c) continue;
        vg__attr a = {.name = "parallel_iterations", .type = VG_ATTR_INT, .u.i = 1};
        if (!vg__op_put_attr(op, &a)) return VG_OOM(st, "while gradient");
    }
    ci->ctx[c].parallel_iterations = 1;
    char scope[1100];
    snprintf(scope, sizeof scope, "%.*s/", (int)(strlen(ci->ctx[c].frame_name) - strlen("/while_context")),
             ci->ctx[c].frame_name);
    vg_graph_push_scope(g, scope);
    vg_code rc = VG_OK;
    /* the forward loop's counter and accumulators are made under TF's
     * control_dependencies(None): gradients built under a control dependency on the
     * loop's own output must not make the loop wait for itself
     * (testWhileGradInControlDeps) */
    vg_output zero = vg_const_i32(g, 0, "f_count");
    if (zero.op) zero.op->ncontrol = 0;
    if (!place(ci, zero.op, p)) goto fail;
    vg_output e = vg_enter(g, zero, ci->ctx[c].frame_name, false, 1, "f_count");
    if (e.op) e.op->ncontrol = 0;
    if (!place(ci, e.op, p)) goto fail;
    e.op->out_shapes[0] = vg_output_shape(zero); /* TF's _Enter(use_input_shape=True) */
    vg_output in[2] = {e, e};
    vg_op *m = vg_merge(g, in, 2, "f_count");
    if (!place(ci, m, c)) goto fail;
    vg_op *sw = vg_switch(g, vg_out(m, 0), vg_out(ci->ctx[c].loop_cond, 0), "f_count");
    if (!place(ci, sw, c)) goto fail;
    vg_output id = vg_identity(g, vg_out(sw, 1), "f_count");
    if (!place(ci, id.op, c)) goto fail;
    vg_output one = vg_const_i32(g, 1, "f_count");
    if (!place(ci, one.op, c)) goto fail;
    vg_output add = vg_add(g, id, one, "f_count");
    if (!place(ci, add.op, c)) goto fail;
    vg_output nx = vg_next_iteration(g, add, "f_count");
    if (!place(ci, nx.op, c)) goto fail;
    vg__cf_set_input(m, 1, nx);
    vg_output ex = vg_exit(g, vg_out(sw, 0), "f_count");
    if (!place(ci, ex.op, p)) goto fail;
    ci->ctx[c].fwd_count = ex;
    ci->ctx[c].fwd_sync = add.op;
    ci->ctx[c].fwd_index = id;
    *count = ex;
    vg_graph_pop_scope(g);
    return rc;
fail:
    vg_graph_pop_scope(g);
    rc = vg_graph_status(g, st);
    return rc != VG_OK ? rc : VG_OOM(st, "while gradient");
}

/* The gradient loop a's copy of the pivot of forward cond branch cc: Identity of
 * Switch(pred, pred)[branch] on the popped predicate (made once per loop and branch). */
static vg_code bwd_cond_pivot(vg_graph *g, vg__cf_info *ci, int a, int cc, vg_op **out, vg_status *st) {
    for (int i = 0; i < ci->ctx[a].ngc; i++)
        if (ci->ctx[a].gcond[i] == cc) {
            *out = ci->ctx[a].gpivot[i];
            return VG_OK;
        }
    vg_output pp;
    vg_code rc = backprop_value(g, ci, a, ci->ctx[cc].pred, &pp, st);
    if (rc != VG_OK) return rc;
    vg_op *sw = vg_switch(g, pp, pp, "b_switch");
    if (!place(ci, sw, a)) goto fail;
    vg_output piv = vg_identity(g, vg_out(sw, ci->ctx[cc].branch), ci->ctx[cc].branch ? "b_switch_t" : "b_switch_f");
    if (!place(ci, piv.op, a)) goto fail;
    vg__cf_ctx *ac = &ci->ctx[a];
    if (!vg__grow((void **)&ac->gcond, &ac->gc_cap, ac->ngc + 1, sizeof(int)) ||
        !vg__grow((void **)&ac->gpivot, &ac->gc_cap2, ac->ngc + 1, sizeof(vg_op *)))
        return VG_OOM(st, "while gradient");
    ac->gcond[ac->ngc] = cc;
    ac->gpivot[ac->ngc++] = piv.op;
    *out = piv.op;
    return VG_OK;
fail:
    rc = vg_graph_status(g, st);
    return rc != VG_OK ? rc : VG_OOM(st, "while gradient");
}

/* TF's AddForwardAccumulator + AddBackpropAccumulatedValue: x (a value of the forward
 * loop of gradient loop a) is pushed on a stack every forward iteration and popped in
 * a. */
static vg_code backprop_value(vg_graph *g, vg__cf_info *ci, int a, vg_output x, vg_output *out, vg_status *st) {
    vg__cf_ctx *ac = &ci->ctx[a];
    for (int i = 0; i < ac->nhist; i++)
        if (ac->hist_from[i].op == x.op && ac->hist_from[i].index == x.index) {
            *out = ac->hist_to[i];
            return VG_OK;
        }
    int f = ac->forward;
    int xc = vg__cf_out_ctx(ci, x);
    bool loop_switch = false;
    for (int i = 0; i < ci->ctx[f].nvars; i++) loop_switch |= ci->ctx[f].switches[i] == x.op;
    /* cc: the cond context whose branch x lives in (x is dead when the branch is not
     * taken): it is pushed only when taken, and popped under the gradient loop's copy
     * of that branch's pivot (TF's grad cond context) */
    int cc = -1;
    if (strcmp(x.op->def->type, "Switch") == 0 && !loop_switch) {
        vg_output p = x.op->inputs[1];
        for (int i = 0; i < ci->n && cc < 0; i++)
            if (ci->ctx[i].kind == VG__CTX_COND && ci->ctx[i].pred.op == p.op && ci->ctx[i].pred.index == p.index &&
                ci->ctx[i].branch == x.index)
                cc = i;
        if (cc < 0) xc = -2;
    } else if (xc >= 0 && ci->ctx[xc].kind == VG__CTX_COND) {
        cc = xc;
    }
    if (cc >= 0 && vg__cf_frame_ctx(ci, cc) == f) xc = f;
    if (xc != f)
        return vg_status_set(st, VG_UNIMPLEMENTED,
                             "gradient: '%s' is inside a nested loop of the while loop '%s' or is a Switch of no "
                             "vg_cond; saving it for the gradient loop is not supported",
                             x.op->name, ci->ctx[f].frame_name);
    vg_op *guard = NULL;
    if (cc >= 0) {
        vg_code grc = bwd_cond_pivot(g, ci, a, cc, &guard, st);
        if (grc != VG_OK) return grc;
        ac = &ci->ctx[a];
    }
    vg_output count;
    vg_code rc = vg__cf_forward_count(g, ci, f, &count, st);
    if (rc != VG_OK) return rc;
    int p = ci->ctx[f].parent;
    vg_output s = vg_stack(g, vg_output_dtype(x), NULL, "f_acc");
    if (s.op) s.op->ncontrol = s.op->inputs[0].op->ncontrol = 0; /* control_dependencies(None) */
    if (!s.op || !place(ci, s.op->inputs[0].op, p) || !place(ci, s.op, p)) goto fail;
    vg_output eh = vg_enter(g, s, ci->ctx[f].frame_name, true, 1, "f_acc");
    if (eh.op) eh.op->ncontrol = 0;
    if (!place(ci, eh.op, p)) goto fail;
    vg_output push = vg_stack_push(g, eh, x, "f_acc");
    if (!place(ci, push.op, cc >= 0 ? cc : f)) goto fail;
    {
        /* The push is ordered before the counter's increment and before the counter's
         * Exit (so the gradient loop, which starts from that Exit, and the stack closes
         * after it never overtake a push of the last forward iteration when nodes run
         * concurrently). A push that may be dead goes through a ControlTrigger, which is
         * never dead; so does the Exit's edge, as the body's pushes are dead in the last
         * iteration. */
        vg_op *trig = vg_control_trigger(g, "f_acc_sync");
        if (!trig || vg_op_add_control_input(trig, push.op) != VG_OK || !place(ci, trig, f) ||
            vg_op_add_control_input(ci->ctx[f].fwd_sync, cc >= 0 ? trig : push.op) != VG_OK ||
            vg_op_add_control_input(ci->ctx[f].fwd_count.op, trig) != VG_OK)
            goto fail;
    }
    vg_output pop = vg_stack_pop(g, s, vg_output_dtype(x), "b_acc");
    if (!pop.op) goto fail;
    pop.op->out_shapes[0] = vg_output_shape(x);
    if (!place(ci, pop.op, a) || vg_op_add_control_input(pop.op, guard ? guard : ci->ctx[a].pivot) != VG_OK) goto fail;
    ac = &ci->ctx[a];
    if (!vg__grow((void **)&ac->hist_from, &ac->hist_cap, ac->nhist + 1, sizeof(vg_output)) ||
        !vg__grow((void **)&ac->hist_to, &ac->hist_cap2, ac->nhist + 1, sizeof(vg_output))) {
        return VG_OOM(st, "while gradient");
    }
    ac->hist_from[ac->nhist] = x;
    ac->hist_to[ac->nhist] = pop;
    ac->nhist++;
    vg__cf_ctx *fc = &ci->ctx[f];
    if (!vg__grow((void **)&fc->stacks, &fc->stacks_cap, fc->nstacks + 1, sizeof(vg_output))) return VG_OOM(st, "while gradient");
    fc->stacks[fc->nstacks++] = s;
    *out = pop;
    return VG_OK;
fail:
    rc = vg_graph_status(g, st);
    return rc != VG_OK ? rc : VG_OOM(st, "while gradient");
}

vg_code vg__cf_grad_while(vg_graph *g, int forward, vg_while_cond_fn cond_fn, vg_while_body_fn body_fn, void *user,
                          const vg_output *loop_vars, int n, vg_output *outs, vg_status *st) {
    vg__cf_info *ci = vg__cf_info_get(g, true);
    if (!ci) return VG_OOM(st, "while gradient");
    grad_forward_pending = forward;
    vg_code rc = vg_while_loop(g, cond_fn, body_fn, user, loop_vars, n, NULL, 1, vg_out(NULL, 0), "while", outs, st);
    grad_forward_pending = -1;
    return rc;
}
