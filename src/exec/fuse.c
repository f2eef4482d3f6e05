/*
 * fuse.c - plan-time fusion of Conv2D -> BiasAdd [-> Relu] (as TF grappler's remapper
 * turns them into _FusedConv2D) and of MaxPoolGrad -> ReluGrad, kept out of the user's
 * graph: only the plan's nodes change.
 *
 * Pattern: a Conv2D node whose output has one consumer, a BiasAdd (NHWC) taking it as
 * input 0, whose output again has one consumer, a Relu (optional). None of the three
 * outputs is fed, and the Conv2D output and (with a Relu) the BiasAdd output are not
 * fetched. Rewrite:
 *   - the Conv2D node runs the fused kernel (_VigilFusedConv2DBias or
 *     _VigilFusedConv2DBiasRelu, src/kernels/nn/conv_ops.c) with the bias as a third input
 *     (an edge from the bias's producer to it);
 *   - the BiasAdd and Relu nodes run _VigilFusedForward: output 0 is input 0, shared.
 * Ops downstream see the same values (up to float rounding of the fused kernels), and
 * tracing still lists the three nodes. The fused kernels compute in the op's dtype.
 *
 * Backward: a MaxPoolGrad(x, y, dy) whose only consumer is ReluGrad(it, x) (the pool's
 * input is a Relu's output, as in conv -> relu -> max_pool) runs
 * _VigilFusedMaxPoolGradReluGrad (the gradient zeroed where x <= 0, as ReluGrad does)
 * and the ReluGrad node forwards its output. Where a BiasAddGrad (NHWC) also reads that
 * gradient (conv -> bias -> relu -> max_pool), the pool-gradient node runs
 * _VigilFusedMaxPoolGradReluGradBiasAddGrad instead, which sums the gradient per channel
 * while writing it, as a second output: the plan gives the node new output slots (its
 * consumers are renumbered) and the BiasAddGrad node forwards the sums, so that the
 * 64x28x28x32 gradient is not read a second time.
 *
 * Further: where that masked gradient's only other reader is a Conv2DBackpropFilter
 * (a CNN's first layer: nobody asks for the input gradient) and the pool is 2x2 /
 * stride 2 VALID float32, the filter-gradient node runs
 * _VigilFusedMaxPoolGradConv2DBackpropFilter on the pool gradient's inputs and gives
 * the bias gradient too; the pool-gradient and ReluGrad nodes run NoOp, and the
 * gradient itself is never materialised (see fuse_pool_grad_conv_filter).
 *
 * Forward again: a fused Conv2D + BiasAdd + Relu whose Relu output a MaxPool (2x2,
 * stride 2, VALID) reads runs _VigilFusedConv2DBiasReluMaxPool, whose second output is
 * the pool (computed per image while it is in cache on the direct path) and which the
 * MaxPool node forwards.
 */
#include "exec.h"
#include <string.h>

static atomic_int g_fusion = 1;

bool vg__plan_set_fusion(bool on) {
    bool old = atomic_load(&g_fusion) != 0;
    atomic_store(&g_fusion, on ? 1 : 0);
    return old;
}

static bool is_type(const vg__node *n, const char *t) { return !n->amp && strcmp(n->def->type, t) == 0; }
/* For the chains that fuse painted (exec/amp.c) as well (Conv2D -> BiasAdd -> Relu ->
 * MaxPool, MaxPoolGrad -> ReluGrad): every node painted or none; the fused node rounds
 * once, at its end. */
static bool is_type_as(const vg__node *n, const char *t, bool amp) { return n->amp == amp && strcmp(n->def->type, t) == 0; }

/* The node consuming slot s, when exactly one node input (and no fetch) uses it. */
static int sole_consumer(const vg__plan *p, int s) {
    if (s < 0 || p->slot_uses[s] != 1) return -1;
    for (int i = 0; i < p->nnodes; i++) {
        const vg__node *n = &p->nodes[i];
        for (int k = 0; k < n->ninputs; k++)
            if (n->in_slot[k] == s) return i;
    }
    return -1; /* the use is a fetch */
}

bool vg__plan_node_fed(const vg__node *n) {
    for (int i = 0; n->out_fed && i < n->noutputs; i++)
        if (n->out_fed[i]) return true;
    return false;
}

bool vg__plan_add_succ_once(vg__plan *p, int *succ_cap, int from, int to) {
    vg__node *n = &p->nodes[from];
    for (int e = 0; e < n->nsucc; e++)
        if (n->succ[e] == to) return true;
    if (!vg__grow((void **)&n->succ, &succ_cap[from], n->nsucc + 1, sizeof(int))) return false;
    n->succ[n->nsucc++] = to;
    return true;
}

int *vg__plan_slot_producers(const vg__plan *p) {
    int *prod = vg__malloc(sizeof(int) * (size_t)(p->nslots + 1));
    if (!prod) return NULL;
    for (int s = 0; s < p->nslots; s++) prod[s] = -1;
    for (int i = 0; i < p->nnodes; i++) {
        const vg__node *n = &p->nodes[i];
        for (int k = 0; k < n->noutputs; k++)
            if (n->out_base >= 0 && !(n->out_fed && n->out_fed[k])) prod[n->out_base + k] = i;
    }
    return prod;
}

bool *vg__plan_control_sources(const vg__plan *p) {
    int maxid = 0;
    for (int i = 0; i < p->nnodes; i++)
        if (p->nodes[i].op->id > maxid) maxid = p->nodes[i].op->id;
    bool *src = vg__calloc((size_t)p->nnodes + 1, sizeof(bool));
    int *node_of = vg__malloc(sizeof(int) * (size_t)(maxid + 1)); /* op id -> plan node */
    if (!src || !node_of) {
        vg__free(src);
        vg__free(node_of);
        return NULL;
    }
    for (int i = 0; i <= maxid; i++) node_of[i] = -1;
    for (int i = 0; i < p->nnodes; i++) node_of[p->nodes[i].op->id] = i;
    for (int i = 0; i < p->nnodes; i++) {
        const vg_op *op = p->nodes[i].op;
        for (int k = 0; k < op->ncontrol; k++) {
            int id = op->control[k]->id;
            if (id <= maxid && node_of[id] >= 0) src[node_of[id]] = true;
        }
    }
    vg__free(node_of);
    return src;
}

/* MaxPoolGrad(x, y, dy) whose only consumer is ReluGrad(it, x), x being the pool's own
 * input (a Relu's output): one kernel masks the pool gradient where x <= 0. */
static void fuse_pool_relu_grad(vg__plan *p, const vg__op_def *fused, const vg__op_def *fwd) {
    for (int m = 0; m < p->nnodes; m++) {
        vg__node *mn = &p->nodes[m];
        if (!is_type_as(mn, "MaxPoolGrad", mn->amp) || mn->ninputs != 3 || mn->noutputs != 1 || mn->in_slot[0] < 0 ||
            vg__plan_node_fed(mn))
            continue;
        int r = sole_consumer(p, mn->out_base);
        if (r < 0) continue;
        vg__node *rn = &p->nodes[r];
        if (!is_type_as(rn, "ReluGrad", mn->amp) || rn->ninputs != 2 || rn->in_slot[0] != mn->out_base ||
            rn->in_slot[1] != mn->in_slot[0] || vg__plan_node_fed(rn))
            continue;
        mn->def = fused;
        rn->def = fwd;
        rn->amp = false; /* painted pairs too: both only select values, nothing to round between */
    }
}

/* Gives node m one more output, read by node b in place of what b computed: m's output
 * slots move to new slots at the end (consumers and fetches renumbered), and b becomes
 * _VigilFusedForward of the new last output (b must run after m). Returns false on OOM. */
static bool add_side_output(vg__plan *p, int m, int b, const vg__op_def *fwd) {
    vg__node *mn = &p->nodes[m], *bn = &p->nodes[b];
    int nout = mn->noutputs, base = p->nslots;
    int *uses = vg__realloc(p->slot_uses, sizeof(int) * (size_t)(p->nslots + 1),
                            sizeof(int) * (size_t)(p->nslots + nout + 2));
    if (!uses) return false;
    p->slot_uses = uses;
    for (int k = 0; k <= nout; k++) uses[base + k] = 0;
    uses[base + nout + 1] = 0;
    for (int k = 0; k < nout; k++) {
        int old = mn->out_base + k;
        for (int i = 0; i < p->nnodes; i++)
            for (int q = 0; q < p->nodes[i].ninputs; q++)
                if (p->nodes[i].in_slot[q] == old) p->nodes[i].in_slot[q] = base + k;
        for (int f = 0; f < p->nfetches; f++)
            if (p->fetch_slot[f] == old) p->fetch_slot[f] = base + k;
        uses[base + k] = uses[old];
        uses[old] = 0;
    }
    for (int q = 0; q < bn->ninputs; q++)
        if (bn->in_slot[q] >= 0) uses[bn->in_slot[q]]--;
    bn->ninputs = 1;
    bn->in_slot[0] = base + nout;
    bn->in_var[0] = NULL;
    uses[base + nout] = 1;
    bn->def = fwd;
    mn->out_base = base;
    mn->noutputs = nout + 1;
    p->nslots = base + nout + 1;
    return true;
}

/* _VigilFusedMaxPoolGradReluGrad nodes whose masked gradient (the ReluGrad node's
 * output) a BiasAddGrad (NHWC) also reads: that node takes the sums from the pool
 * gradient's kernel. The ReluGrad node (which forwards the gradient) runs after the
 * pool gradient and before the BiasAddGrad, so the order holds. */
static bool fuse_pool_bias_grad(vg__plan *p, const vg__op_def *fpr, const vg__op_def *fprb, const vg__op_def *fwd) {
    for (int m = 0; m < p->nnodes; m++) {
        vg__node *mn = &p->nodes[m];
        if (mn->def != fpr || mn->noutputs != 1) continue;
        int r = sole_consumer(p, mn->out_base);
        if (r < 0 || p->nodes[r].def != fwd || p->nodes[r].noutputs != 1) continue;
        int dx = p->nodes[r].out_base;
        for (int b = 0; b < p->nnodes; b++) {
            vg__node *bn = &p->nodes[b];
            if (!is_type(bn, "BiasAddGrad") || bn->def != bn->op->def || bn->ninputs != 1 || bn->in_slot[0] != dx ||
                bn->noutputs != 1 || vg__plan_node_fed(bn))
                continue;
            const char *df;
            size_t dflen;
            if (vg_op_attr_string(bn->op, "data_format", &df, &dflen) && !(dflen == 4 && !memcmp(df, "NHWC", 4)))
                continue;
            if (!add_side_output(p, m, b, fwd)) return false;
            mn->def = fprb;
            break;
        }
    }
    return true;
}

static bool attr_is(const vg_op *op, const char *name, const char *want);
static bool attr_2x2(const vg_op *op, const char *name);

/* _VigilFusedMaxPoolGradReluGradBiasAddGrad nodes (m) of a 2x2 / 2 VALID float32 max
 * pool whose masked gradient (forwarded by the ReluGrad node r) only a
 * Conv2DBackpropFilter (c) reads: the first layer of a CNN, whose input gradient is not
 * asked for. c runs _VigilFusedMaxPoolGradConv2DBackpropFilter on m's inputs and
 * gives the bias gradient as a second output (which the BiasAddGrad node b forwards);
 * m and r run NoOp, so the 64x28x28x32 gradient is neither written nor read. Edges
 * producers -> m -> r -> c stay, so c still runs after m's inputs exist; an edge c -> b
 * is added. */
static bool fuse_pool_grad_conv_filter(vg__plan *p, int *succ_cap, const vg__op_def *fprb, const vg__op_def *fwd,
                                       const vg__op_def *fpcf, const vg__op_def *noop) {
    for (int m = 0; m < p->nnodes; m++) {
        vg__node *mn = &p->nodes[m];
        if (mn->def != fprb || mn->noutputs != 2 || mn->ninputs != 3 || vg__plan_node_fed(mn)) continue;
        const char *df;
        size_t dflen;
        if (!attr_2x2(mn->op, "ksize") || !attr_2x2(mn->op, "strides") || !attr_is(mn->op, "padding", "VALID") ||
            (vg_op_attr_string(mn->op, "data_format", &df, &dflen) && !(dflen == 4 && !memcmp(df, "NHWC", 4))) ||
            vg_output_dtype(vg_op_input(mn->op, 0)) != VG_FLOAT)
            continue;
        int r = sole_consumer(p, mn->out_base), b = sole_consumer(p, mn->out_base + 1);
        if (r < 0 || b < 0 || p->nodes[r].def != fwd || p->nodes[b].def != fwd || p->nodes[r].noutputs != 1 ||
            p->nodes[r].ninputs < 1 || p->nodes[r].in_slot[0] != mn->out_base)
            continue;
        int c = sole_consumer(p, p->nodes[r].out_base);
        if (c < 0) continue;
        vg__node *cn = &p->nodes[c], *rn = &p->nodes[r];
        if (!is_type(cn, "Conv2DBackpropFilter") || cn->def != cn->op->def || cn->ninputs != 3 || cn->noutputs != 1 ||
            cn->in_slot[2] != rn->out_base || cn->in_slot[0] < 0 || cn->in_slot[1] < 0 || vg__plan_node_fed(cn) ||
            (vg_op_attr_string(cn->op, "data_format", &df, &dflen) && !(dflen == 4 && !memcmp(df, "NHWC", 4))))
            continue;
        int *in_slot = vg__malloc(sizeof(int) * 5);
        vg__var **in_var = vg__calloc(5, sizeof(vg__var *));
        if (!in_slot || !in_var || !vg__grow((void **)&cn->succ, &succ_cap[c], cn->nsucc + 1, sizeof(int))) {
            vg__free(in_slot);
            vg__free(in_var);
            return false;
        }
        in_slot[0] = cn->in_slot[0];
        in_slot[1] = cn->in_slot[1];
        in_var[0] = cn->in_var[0];
        in_var[1] = cn->in_var[1];
        for (int k = 0; k < 3; k++) {
            in_slot[2 + k] = mn->in_slot[k];
            in_var[2 + k] = mn->in_var[k];
        }
        if (!add_side_output(p, c, b, fwd)) {
            vg__free(in_slot);
            vg__free(in_var);
            return false;
        }
        cn = &p->nodes[c];
        cn->succ[cn->nsucc++] = b;
        p->slot_uses[rn->out_base]--; /* c's old out_backprop */
        vg__free(cn->in_slot);
        vg__free(cn->in_var);
        cn->in_slot = in_slot;
        cn->in_var = in_var;
        cn->ninputs = 5;
        cn->def = fpcf;
        /* m's inputs move to c (their uses with them); m and r read and write nothing */
        for (int k = 0; k < rn->ninputs; k++)
            if (rn->in_slot[k] >= 0) p->slot_uses[rn->in_slot[k]]--;
        rn->ninputs = 0;
        rn->def = noop;
        mn->ninputs = 0;
        mn->def = noop;
    }
    return true;
}

static bool attr_is(const vg_op *op, const char *name, const char *want) {
    const char *v;
    size_t len;
    return vg_op_attr_string(op, name, &v, &len) && len == strlen(want) && !memcmp(v, want, len);
}

static bool attr_2x2(const vg_op *op, const char *name) {
    const int64_t *v;
    int n;
    return vg_op_attr_int_list(op, name, &v, &n) && n == 4 && v[0] == 1 && v[1] == 2 && v[2] == 2 && v[3] == 1;
}

/* Fused Conv2D + BiasAdd + Relu nodes whose Relu output a MaxPool (2x2, stride 2,
 * VALID, NHWC) reads: the conv node pools too (a second output) and the MaxPool node
 * forwards it. */
static bool fuse_conv_pool(vg__plan *p, const vg__op_def *fbr, const vg__op_def *fbrp, const vg__op_def *fwd) {
    for (int c = 0; c < p->nnodes; c++) {
        vg__node *cn = &p->nodes[c];
        if (cn->def != fbr || cn->noutputs != 1) continue;
        int b = sole_consumer(p, cn->out_base);
        int r = b >= 0 && p->nodes[b].def == fwd ? sole_consumer(p, p->nodes[b].out_base) : -1;
        if (r < 0 || p->nodes[r].def != fwd || strcmp(p->nodes[r].op->def->type, "Relu") != 0)
            continue;
        int relu_out = p->nodes[r].out_base;
        for (int m = 0; m < p->nnodes; m++) {
            vg__node *mn = &p->nodes[m];
            if (!is_type_as(mn, "MaxPool", cn->amp) || mn->def != mn->op->def || mn->ninputs != 1 ||
                mn->in_slot[0] != relu_out || mn->noutputs != 1 || vg__plan_node_fed(mn))
                continue;
            const char *df;
            size_t dflen;
            if (!attr_2x2(mn->op, "ksize") || !attr_2x2(mn->op, "strides") || !attr_is(mn->op, "padding", "VALID") ||
                (vg_op_attr_string(mn->op, "data_format", &df, &dflen) && !(dflen == 4 && !memcmp(df, "NHWC", 4))))
                continue;
            if (!add_side_output(p, c, m, fwd)) return false;
            cn->def = fbrp;
            mn->amp = false; /* forwards the fused node's (rounded) output */
            break;
        }
    }
    return true;
}

/* Batch norm and its activation (MobileNet's BN -> ReLU6, ResNet's BN -> ReLU; issue 30):
 *   - a FusedBatchNormV3 whose y only a Relu / Relu6 reads runs
 *     _VigilFusedBatchNormRelu[6] (y is written activated), the activation node forwards;
 *   - a FusedBatchNormGradV3 whose y_backprop is a ReluGrad / Relu6Grad's output (read by
 *     it alone) runs _VigilFusedBatchNormGradRelu[6]Grad on that op's inputs (its
 *     gradient as input 0, the activation's output as input 6), masking on the fly; the
 *     activation-gradient node runs NoOp. Edges producers -> that node -> the batch-norm
 *     gradient stay, so the order holds, and the masked gradient is never written. */
static bool orig_type(const vg__node *n, const char *t) { return strcmp(vg_op_type(n->op), t) == 0; }

static bool same_float_attr(const vg_op *a, const vg_op *b, const char *name) {
    float x, y;
    bool hx = vg_op_attr_float(a, name, &x), hy = vg_op_attr_float(b, name, &y);
    return hx == hy && (!hx || x == y);
}

static bool same_bool_attr(const vg_op *a, const vg_op *b, const char *name) {
    bool x, y;
    bool hx = vg_op_attr_bool(a, name, &x), hy = vg_op_attr_bool(b, name, &y);
    return hx == hy && (!hx || x == y);
}

/* For the batch-norm gradient bn fused with the activation gradient of kind k (0 Relu,
 * 1 Relu6) whose activation output is slot f: the FusedBatchNormV3 node whose y that
 * activation (as built, or forwarding after fuse_bn_act) reads, when it normalised the
 * same x with the same scale, mean, variance (its reserve spaces when training, its
 * mean / variance inputs when not) and epsilon; else NULL. Then f = act((x - m) * a +
 * offset) exactly as the kernel computes it, and the gradient can recompute its mask
 * from x and the forward's offset instead of reading f (nn_norm_ops.c bn_backward). */
static const vg__node *bn_act_forward(const vg__plan *p, const int *prod, int f, int k, const vg__node *bn) {
    if (f < 0 || prod[f] < 0) return NULL;
    const vg__node *an = &p->nodes[prod[f]];
    if (!orig_type(an, k ? "Relu6" : "Relu") || an->ninputs != 1 || an->noutputs != 1 || an->out_base != f ||
        an->in_slot[0] < 0 || vg__plan_node_fed(an) || prod[an->in_slot[0]] < 0)
        return NULL;
    if (an->def != an->op->def && strcmp(an->def->type, "_VigilFusedForward")) return NULL;
    const vg__node *fb = &p->nodes[prod[an->in_slot[0]]];
    if (!orig_type(fb, "FusedBatchNormV3") || fb->ninputs != 5 || fb->noutputs != 6 ||
        an->in_slot[0] != fb->out_base || vg__plan_node_fed(fb) || fb->in_slot[2] < 0)
        return NULL;
    if (strcmp(fb->def->type, "FusedBatchNormV3") && strcmp(fb->def->type, k ? "_VigilFusedBatchNormRelu6"
                                                                              : "_VigilFusedBatchNormRelu"))
        return NULL;
    if (fb->amp != bn->amp) return NULL; /* a painted forward's y is rounded: so is the recomputed one */
    bool training = true;
    vg_op_attr_bool(fb->op, "is_training", &training);
    if (fb->in_slot[0] != bn->in_slot[1] || fb->in_slot[1] != bn->in_slot[2] ||
        !same_float_attr(fb->op, bn->op, "epsilon") || !same_bool_attr(fb->op, bn->op, "is_training"))
        return NULL;
    if (training ? bn->in_slot[3] != fb->out_base + 3 || bn->in_slot[4] != fb->out_base + 4
                 : bn->in_slot[3] != fb->in_slot[3] || bn->in_slot[4] != fb->in_slot[4] || bn->in_slot[3] < 0 ||
                       bn->in_slot[4] < 0)
        return NULL;
    return fb;
}

static bool fuse_bn_act(vg__plan *p, const vg__op_def *noop, const vg__op_def *fwd) {
    static const char *const fwd_names[2] = {"_VigilFusedBatchNormRelu", "_VigilFusedBatchNormRelu6"};
    static const char *const grad_names[2] = {"_VigilFusedBatchNormGradReluGrad", "_VigilFusedBatchNormGradRelu6Grad"};
    const vg__op_def *fdef[2], *gdef[2];
    for (int k = 0; k < 2; k++) {
        fdef[k] = vg__registry_find(fwd_names[k]);
        gdef[k] = vg__registry_find(grad_names[k]);
        if (!fdef[k] || !gdef[k]) return true;
    }
    for (int b = 0; b < p->nnodes; b++) {
        vg__node *bn = &p->nodes[b];
        /* painted pairs too (exec/amp.c; both or neither): the fused kernel rounds y */
        if (!is_type_as(bn, "FusedBatchNormV3", bn->amp) || bn->def != bn->op->def || bn->ninputs != 5 ||
            bn->noutputs != 6 || vg__plan_node_fed(bn))
            continue;
        int r = sole_consumer(p, bn->out_base);
        if (r < 0) continue;
        vg__node *rn = &p->nodes[r];
        int k = is_type_as(rn, "Relu", bn->amp) ? 0 : is_type_as(rn, "Relu6", bn->amp) ? 1 : -1;
        if (k < 0 || rn->def != rn->op->def || rn->ninputs != 1 || rn->in_slot[0] != bn->out_base || vg__plan_node_fed(rn))
            continue;
        bn->def = fdef[k];
        rn->def = fwd;
        rn->amp = false; /* forwards the fused node's (rounded) output */
    }
    int *prod = vg__plan_slot_producers(p);
    if (!prod) return false;
    for (int r = 0; r < p->nnodes; r++) {
        vg__node *rn = &p->nodes[r];
        int k = is_type_as(rn, "ReluGrad", rn->amp) ? 0 : is_type_as(rn, "Relu6Grad", rn->amp) ? 1 : -1;
        if (k < 0 || rn->def != rn->op->def || rn->ninputs != 2 || rn->noutputs != 1 || rn->in_slot[0] < 0 ||
            rn->in_slot[1] < 0 || vg__plan_node_fed(rn))
            continue;
        int b = sole_consumer(p, rn->out_base);
        if (b < 0) continue;
        vg__node *bn = &p->nodes[b];
        if (!is_type_as(bn, "FusedBatchNormGradV3", rn->amp) || bn->def != bn->op->def || bn->ninputs != 6 ||
            bn->in_slot[0] != rn->out_base || vg__plan_node_fed(bn))
            continue;
        int *in_slot = vg__malloc(sizeof(int) * 7);
        vg__var **in_var = vg__calloc(7, sizeof(vg__var *));
        if (!in_slot || !in_var) {
            vg__free(in_slot);
            vg__free(in_var);
            vg__free(prod);
            return false;
        }
        memcpy(in_slot, bn->in_slot, sizeof(int) * 6);
        memcpy(in_var, bn->in_var, sizeof(vg__var *) * 6);
        in_slot[0] = rn->in_slot[0], in_var[0] = rn->in_var[0];
        in_slot[6] = rn->in_slot[1], in_var[6] = rn->in_var[1];
        const vg__node *fb = bn_act_forward(p, prod, rn->in_slot[1], k, bn);
        if (fb) { /* the mask from y recomputed: input 6 is the forward's offset [C] */
            p->slot_uses[rn->in_slot[1]]--;
            p->slot_uses[fb->in_slot[2]]++;
            in_slot[6] = fb->in_slot[2], in_var[6] = fb->in_var ? fb->in_var[2] : NULL;
        }
        if (bn->amp) { /* painted: amp_round has ninputs + 1 = 7 entries (amp.c); the
                        * activation gradient's inputs are rounded as it would have */
            bn->amp_round[0] = rn->amp_round[0];
            bn->amp_round[6] = fb ? false : rn->amp_round[1];
            rn->amp = false;
        }
        p->slot_uses[rn->out_base]--; /* the masked gradient is read by nobody now */
        vg__free(bn->in_slot);
        vg__free(bn->in_var);
        bn->in_slot = in_slot;
        bn->in_var = in_var;
        bn->ninputs = 7;
        bn->def = gdef[k];
        rn->ninputs = 0; /* its inputs' uses move to the batch-norm gradient */
        rn->def = noop;
    }
    vg__free(prod);
    return true;
}

vg_code vg__plan_fuse(vg__plan *p, int *succ_cap, vg_status *st) {
    if (!atomic_load(&g_fusion) || p->nnodes < 2) return VG_OK;
    const vg__op_def *fb = vg__registry_find("_VigilFusedConv2DBias");
    const vg__op_def *fbr = vg__registry_find("_VigilFusedConv2DBiasRelu");
    const vg__op_def *fwd = vg__registry_find("_VigilFusedForward");
    const vg__op_def *fpr = vg__registry_find("_VigilFusedMaxPoolGradReluGrad");
    const vg__op_def *fprb = vg__registry_find("_VigilFusedMaxPoolGradReluGradBiasAddGrad");
    const vg__op_def *fbrp = vg__registry_find("_VigilFusedConv2DBiasReluMaxPool");
    const vg__op_def *fpcf = vg__registry_find("_VigilFusedMaxPoolGradConv2DBackpropFilter");
    const vg__op_def *noop = vg__registry_find("NoOp");
    if (!fb || !fbr || !fwd || !fpr || !fprb || !fbrp) return VG_OK;
    if (noop && !fuse_bn_act(p, noop, fwd))
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory building the execution plan");
    fuse_pool_relu_grad(p, fpr, fwd);
    if (!fuse_pool_bias_grad(p, fpr, fprb, fwd) ||
        (fpcf && noop && !fuse_pool_grad_conv_filter(p, succ_cap, fprb, fwd, fpcf, noop)))
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory building the execution plan");
    int *producer = NULL, *mark = NULL, *stack = NULL;
    int stamp = 0;
    for (int c = 0; c < p->nnodes; c++) {
        vg__node *cn = &p->nodes[c];
        if (!is_type_as(cn, "Conv2D", cn->amp) || cn->ninputs != 2 || cn->noutputs != 1 || vg__plan_node_fed(cn))
            continue;
        int b = sole_consumer(p, cn->out_base);
        if (b < 0) continue;
        vg__node *bn = &p->nodes[b];
        if (!is_type_as(bn, "BiasAdd", cn->amp) || bn->ninputs != 2 || bn->in_slot[0] != cn->out_base || bn->in_slot[1] < 0 ||
            vg__plan_node_fed(bn))
            continue;
        const char *df;
        size_t dflen;
        if (vg_op_attr_string(bn->op, "data_format", &df, &dflen) && !(dflen == 4 && !memcmp(df, "NHWC", 4))) continue;
        int r = sole_consumer(p, bn->out_base);
        vg__node *rn = r >= 0 ? &p->nodes[r] : NULL;
        if (rn && (!is_type_as(rn, "Relu", cn->amp) || rn->in_slot[0] != bn->out_base || vg__plan_node_fed(rn))) rn = NULL;
        /* the bias's producer must not depend on the convolution (it runs before it now) */
        if (!producer) {
            producer = vg__plan_slot_producers(p);
            mark = vg__calloc((size_t)p->nnodes + 1, sizeof(int));
            stack = vg__malloc(sizeof(int) * (size_t)(p->nnodes + 1));
            if (!producer || !mark || !stack) goto oom;
        }
        int bias_slot = bn->in_slot[1], src = producer[bias_slot];
        if (src == c || (src >= 0 && vg__plan_reaches(p, c, src, mark, ++stamp, stack))) continue;
        int *in_slot = vg__malloc(sizeof(int) * 4);
        vg__var **in_var = vg__calloc(4, sizeof(vg__var *));
        if (!in_slot || !in_var) {
            vg__free(in_slot);
            vg__free(in_var);
            goto oom;
        }
        if (src >= 0) {
            vg__node *sn = &p->nodes[src];
            if (!vg__grow((void **)&sn->succ, &succ_cap[src], sn->nsucc + 1, sizeof(int))) {
                vg__free(in_slot);
                vg__free(in_var);
                goto oom;
            }
            sn->succ[sn->nsucc++] = c;
        }
        memcpy(in_slot, cn->in_slot, sizeof(int) * 2);
        memcpy(in_var, cn->in_var, sizeof(vg__var *) * 2);
        in_slot[2] = bias_slot;
        vg__free(cn->in_slot);
        vg__free(cn->in_var);
        cn->in_slot = in_slot;
        cn->in_var = in_var;
        cn->ninputs = 3;
        p->slot_uses[bias_slot]++;
        cn->def = rn ? fbr : fb;
        bn->def = fwd;
        if (rn) rn->def = fwd;
        if (cn->amp) { /* amp_round has ninputs + 1 entries (amp.c): the bias's is BiasAdd's */
            cn->amp_round[2] = bn->amp_round[1];
            bn->amp = false;
            if (rn) rn->amp = false;
        }
    }
    vg__free(producer);
    vg__free(mark);
    vg__free(stack);
    if (!fuse_conv_pool(p, fbr, fbrp, fwd) || !vg__plan_fuse_matmul_sum(p, succ_cap) ||
        !vg__plan_fuse_elementwise(p, succ_cap))
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory building the execution plan");
    return VG_OK;
oom:
    vg__free(producer);
    vg__free(mark);
    vg__free(stack);
    return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory building the execution plan");
}
