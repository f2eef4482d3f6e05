/*
 * train_op.c - tf.contrib.training.create_train_op (TF 1.15,
 * contrib/training/python/training/training.py) with the gradient clipping of
 * tf.contrib.slim.learning.create_train_op (clip_gradient_norm: each gradient
 * clip_by_norm'ed on its own under the name scope "clip_grads"), from public builders.
 */
#include "train_util.h"
#include "vigil/ops.h"
#include "vigil/optimizer.h"
#include "vigil/train_lib.h"
#include "vigil/variables.h"
#include <stdlib.h>
#include <string.h>

/* control_flow_ops.with_dependencies(deps, t): Identity "control_dependency" (made
 * unique) under the current scope with control inputs on deps */
static vg_output with_dependencies(vg_graph *g, vg_op *const *deps, int n, vg_output t) {
    vg_graph_push_control_deps(g, deps, n);
    vg_output r = vg_identity(g, t, "control_dependency");
    vg_graph_pop_control_deps(g);
    return r;
}

vg_output vg_create_train_op(vg_graph *g, vg_output total_loss, vg_optimizer *opt, const vg_create_train_op_opts *o) {
    vg_output none = {NULL, 0};
    if (!g) return none;
    if (vg_graph_status(g, NULL) != VG_OK) return none;
    if (!total_loss.op || !opt) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "create_train_op: total_loss and optimizer are required");
        return none;
    }
    vg_create_train_op_opts d = {0};
    if (!o) o = &d;
    if (o->clip_gradient_norm < 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "create_train_op: clip_gradient_norm %g is negative",
                           o->clip_gradient_norm);
        return none;
    }
    vg_output global_step = o->global_step.op ? o->global_step : vg_get_or_create_global_step(g);
    if (!global_step.op) return none;

    /* update ops (GraphKeys.UPDATE_OPS) run before the loss is used */
    int nupd = 0;
    const vg_output *upd = vg_graph_collection(g, VG_UPDATE_OPS, &nupd);
    if (nupd > 0) {
        vg_op **ops = malloc((size_t)nupd * sizeof *ops);
        if (!ops) {
            vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "create_train_op: out of memory");
            return none;
        }
        for (int i = 0; i < nupd; i++) ops[i] = upd[i].op;
        vg_graph_push_control_deps(g, ops, nupd);
        vg_op *barrier = vg_no_op(g, "update_barrier");
        vg_graph_pop_control_deps(g);
        free(ops);
        total_loss = with_dependencies(g, &barrier, 1, total_loss);
    }

    /* variables_to_train: the given list or tf.trainable_variables() */
    int nvars = o->nvars;
    const vg_output *vars = o->variables_to_train;
    if (!vars) vars = vg_graph_collection(g, VG_TRAINABLE_VARIABLES, &nvars);
    if (!vars || nvars <= 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "create_train_op: no variables to train");
        return none;
    }
    vg_output *grads = calloc((size_t)nvars, sizeof *grads);
    vg_output *vcopy = malloc((size_t)nvars * sizeof *vcopy);
    if (!grads || !vcopy) {
        free(grads), free(vcopy);
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "create_train_op: out of memory");
        return none;
    }
    memcpy(vcopy, vars, (size_t)nvars * sizeof *vcopy); /* the collection may grow below */
    vg_status st;
    if (vg_optimizer_compute_gradients(opt, g, total_loss, vcopy, nvars, grads, &st) != VG_OK) {
        vg_graph_set_error(g, st.code, "%s", st.msg);
        free(grads), free(vcopy);
        return none;
    }
    if (o->clip_gradient_norm > 0) vg__train_clip_gradients(g, grads, nvars, o->clip_gradient_norm);
    vg_op *grad_updates = vg_optimizer_apply_gradients(opt, g, grads, vcopy, nvars, global_step, NULL);
    free(grads), free(vcopy);
    if (!grad_updates) return none;

    vg_graph_push_scope(g, "train_op");
    vg_output loss = total_loss;
    if (!o->no_check_numerics) loss = vg_check_numerics(g, loss, "LossTensor is inf or nan", "CheckNumerics");
    vg_output train_op = with_dependencies(g, &grad_updates, 1, loss);
    vg_graph_pop_scope(g);
    if (vg_graph_status(g, NULL) != VG_OK) return none;
    vg_graph_add_to_collection(g, "train_op", train_op);
    return train_op;
}

void vg__train_clip_gradients(vg_graph *g, vg_output *grads, int n, double clip_norm) {
    vg_graph_push_scope(g, "clip_grads");
    for (int i = 0; i < n; i++) {
        if (!grads[i].op) continue;
        vg_output c = vg_const_fill(g, vg_output_dtype(grads[i]), NULL, 0, clip_norm, "clip_norm");
        grads[i] = vg_clip_by_norm(g, grads[i], c, NULL, -1, NULL);
    }
    vg_graph_pop_scope(g);
}
