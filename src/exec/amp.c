/*
 * amp.c - TF's auto_mixed_precision graph rewrite, done on the execution plan, with
 * bfloat16 as the low-precision type (as TF's oneDNN builds do on the CPU).
 *
 * TF's pass (grappler/optimizers/auto_mixed_precision.cc, lists in
 * auto_mixed_precision_lists.h) colours the float32 nodes of the graph: the allow
 * ("white") list always, the infer ("gray") and clear lists when they sit between allow
 * nodes, never the deny ("black") list nor what a deny node feeds through clear/infer
 * nodes; it then changes the painted nodes' T to the half type and puts Casts on the
 * edges between painted and unpainted nodes. The graph is immutable here (finalized,
 * shared by plans), so vigil paints the plan's nodes instead and keeps every edge's
 * dtype: a painted node rounds its float32 inputs that come from unpainted nodes to
 * bfloat16 (the Cast to bfloat16), runs, and rounds its float32 outputs to bfloat16
 * (a bfloat16 op's output); its consumers read those values as they are (the Cast back
 * to float32 is exact). Values between painted nodes therefore are bfloat16 values held
 * in float32 buffers; feeds, fetches and their dtypes are unchanged, and variables and
 * the optimizer's updates (not on any list) stay float32. MatMul (the allow list's
 * hot op) runs oneDNN's bfloat16 primitive when painted (kernels/backend/bf16_dnnl.c); the other
 * painted ops compute in float32 and round, as Eigen's bfloat16 arithmetic does.
 *
 * Not painted: plans with control flow (the pass would need frames), fetched nodes (TF
 * preserves the fetch nodes), nodes without a float32 T attribute (or DstT for Cast).
 */
#include "exec/exec.h"
#include "core/bf16_round.h"
#include "core/core.h"
#include "vigil/mixed_precision.h"
#include <stdatomic.h>
#include <string.h>

static atomic_bool g_amp_global;

vg_optimizer *vg_enable_mixed_precision_graph_rewrite(vg_optimizer *opt) {
    atomic_store(&g_amp_global, true);
    return opt;
}

void vg_disable_mixed_precision_graph_rewrite(void) { atomic_store(&g_amp_global, false); }

bool vg_mixed_precision_graph_rewrite_enabled(void) { return atomic_load(&g_amp_global); }

/* ---- TF 1.15's lists (AutoMixedPrecisionLists; BatchMatMul/V2 are on the allow list
 * with CUDA >= 9.1 there and always in the oneDNN variant). The depthwise convolution
 * and its two backprops are on the allow list of TF's oneDNN variant
 * (AutoMixedPrecisionListsMkl, the CPU's bfloat16 lists; CUDA's has them with cuDNN >=
 * 8): without them MobileNet's chains conv -> BN -> ReLU6 -> depthwise -> BN -> ReLU6
 * -> conv kept everything but the pointwise convolutions float32, and every painted
 * convolution paid a cast on each side (issue 34: bfloat16 step 1.11x float32). ---- */
static const char *const allow_ops[] = {
    "BlockLSTM", "BlockLSTMV2", "BlockLSTMGrad", "BlockLSTMGradV2", "Conv2D", "Conv2DBackpropFilter",
    "Conv2DBackpropInput", "CudnnRNN", "CudnnRNNBackprop", "CudnnRNNBackpropV2", "CudnnRNNBackpropV3", "CudnnRNNV2",
    "CudnnRNNV3", "Einsum", "GRUBlockCell", "GRUBlockCellGrad", "LSTMBlockCell", "LSTMBlockCellGrad", "MatMul",
    "BatchMatMul", "BatchMatMulV2", "DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropFilter",
    "DepthwiseConv2dNativeBackpropInput", NULL};
static const char *const infer_ops[] = {
    "Add", "AddN", "AddV2", "AvgPool", "AvgPool3D", "AvgPool3DGrad", "AvgPoolGrad", "BiasAdd", "BiasAddGrad",
    "BiasAddV1", "Elu", "EluGrad", "Erf", "Erfc", "FloorDiv", "FusedBatchNormV2", "FusedBatchNormGradV2",
    "FusedBatchNormV3", "FusedBatchNormGradV3", "_FusedBatchNormEx", "Inv", "LeakyRelu", "LeakyReluGrad", "Log",
    "Log1p", "LogSoftmax", "Mul", "Prod", "RealDiv", "Reciprocal", "Selu", "SeluGrad", "Sigmoid", "SigmoidGrad",
    "Softmax", "Softplus", "SoftplusGrad", "Softsign", "SoftsignGrad", "Sqrt", "Sub", "Tanh", "TanhGrad", NULL};
static const char *const deny_ops[] = {"Exp", "Expm1", "L2Loss", "Mean", "Pow", "SaveV2",
                                       "SoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits",
                                       "Sum", NULL};
static const char *const clear_ops[] = {
    "Abs", "ArgMax", "ArgMin", "BatchToSpace", "BatchToSpaceND", "BroadcastTo", "Ceil", "CheckNumerics",
    "ClipByValue", "Concat", "ConcatV2", "DepthToSpace", "DynamicPartition", "DynamicStitch", "Enter", "EnsureShape",
    "Equal", "Exit", "ExpandDims", "Fill", "Floor", "Gather", "GatherNd", "GatherV2", "Greater", "GreaterEqual",
    "Identity", "IdentityN", "IsFinite", "IsInf", "IsNan", "Less", "LessEqual", "Max", "MaxPool", "MaxPool3D",
    "MaxPool3DGrad", "MaxPool3DGradGrad", "MaxPoolGrad", "MaxPoolGradGrad", "MaxPoolGradGradV2", "MaxPoolGradV2",
    "MaxPoolV2", "Maximum", "Merge", "Min", "Minimum", "MirrorPad", "MirrorPadGrad", "Neg", "NextIteration",
    "NotEqual", "OneHot", "OnesLike", "Pack", "Pad", "PadV2", "PreventGradient", "Rank", "Relu", "Relu6",
    "Relu6Grad", "ReluGrad", "Reshape", "ResizeNearestNeighbor", "ResizeNearestNeighborGrad", "Reverse",
    "ReverseSequence", "ReverseV2", "Round", "Select", "SelectV2", "Shape", "ShapeN", "Sign", "Size", "Slice",
    "Snapshot", "SpaceToBatch", "SpaceToBatchND", "SpaceToDepth", "Split", "SplitV", "Squeeze", "StopGradient",
    "StridedSlice", "StridedSliceGrad", "Switch", "Tile", "TopK", "TopKV2", "Transpose", "Where", "ZerosLike",
    NULL};

enum { L_OTHER, L_ALLOW, L_INFER, L_DENY, L_CLEAR };

static bool in_list(const char *const *l, const char *t) {
    for (; *l; l++)
        if (!strcmp(*l, t)) return true;
    return false;
}

int vg__amp_list_of(const char *type) {
    if (in_list(allow_ops, type)) return L_ALLOW;
    if (in_list(infer_ops, type)) return L_INFER;
    if (in_list(deny_ops, type)) return L_DENY;
    if (in_list(clear_ops, type)) return L_CLEAR;
    return L_OTHER;
}

/* The batch norms' T is x / y (and y_backprop / x_backprop); scale, offset, mean,
 * variance, the batch statistics and the reserve spaces are U, float32 in TF's bfloat16
 * batch norm too: a painted batch norm keeps them float32 (rounds none of them). For
 * these types, the indices of the T inputs / the T outputs, -1 ended; NULL for others
 * (every float32 input and output is T). */
static const int bn_fwd_in[] = {0, -1}, bn_grad_in[] = {0, 1, -1}, bn_out[] = {0, -1};
static bool is_bn_fwd(const char *t) {
    return !strcmp(t, "FusedBatchNormV2") || !strcmp(t, "FusedBatchNormV3") || !strcmp(t, "_FusedBatchNormEx");
}
static bool is_bn_grad(const char *t) { return !strcmp(t, "FusedBatchNormGradV2") || !strcmp(t, "FusedBatchNormGradV3"); }
static bool listed(const int *l, int i) {
    if (!l) return true;
    for (; *l >= 0; l++)
        if (*l == i) return true;
    return false;
}
static const int *t_inputs(const char *t) { return is_bn_fwd(t) ? bn_fwd_in : is_bn_grad(t) ? bn_grad_in : NULL; }
static const int *t_outputs(const char *t) { return is_bn_fwd(t) || is_bn_grad(t) ? bn_out : NULL; }

/* Kernels that round their T outputs to bfloat16 themselves when painted, in the pass
 * that writes them (nn_depthwise_ops.c, nn_norm_ops.c, including the plan's fused batch
 * norm + activation nodes, whose op keeps the original type): the executor's separate
 * rounding pass skips them. */
static bool rounds_itself(const char *t) {
    return !strcmp(t, "DepthwiseConv2dNative") || !strcmp(t, "DepthwiseConv2dNativeBackpropInput") ||
           !strcmp(t, "DepthwiseConv2dNativeBackpropFilter") || !strcmp(t, "FusedBatchNormV3") ||
           !strcmp(t, "FusedBatchNormGradV3");
}

bool vg__amp_session_on(const vg_session *s) { return s->amp; }

vg_code vg_session_set_auto_mixed_precision(vg_session *s, bool on, vg_status *st) {
    if (!s) return vg_status_set(st, VG_INVALID_ARGUMENT, "session is NULL");
    pthread_mutex_lock(&s->mu);
    bool planned = s->nplans > 0;
    if (!planned) s->amp = on;
    pthread_mutex_unlock(&s->mu);
    if (planned)
        return vg_status_set(st, VG_FAILED_PRECONDITION,
                             "auto_mixed_precision must be set before the session's first run");
    return VG_OK;
}

/* The painting's graph: data edges of float32 values between plan nodes (CSR). */
typedef struct amp_graph {
    int n;
    int *in_off, *in_adj;   /* producers of each node's float32 inputs */
    int *out_off, *out_adj; /* consumers of each node's float32 outputs */
    int *stack;
    int *seen; /* == stamp: pushed in the current DFS */
    int stamp;
} amp_graph;

/* DFS from root over inputs (dir 1), outputs (dir 2) or both (3): enter(idx) decides
 * whether a neighbour is entered; visit(idx) runs on the root and each entered node. */
typedef bool (*amp_enter_fn)(void *arg, int root, int idx);
typedef void (*amp_visit_fn)(void *arg, int idx);
static void dfs(amp_graph *G, int root, int dir, amp_enter_fn enter, amp_visit_fn visit, void *arg) {
    int stamp = ++G->stamp, sp = 0;
    G->stack[sp++] = root;
    G->seen[root] = stamp;
    while (sp) {
        int i = G->stack[--sp];
        visit(arg, i);
        for (int d = 1; d <= 2; d++) {
            if (!(dir & d)) continue;
            const int *off = d == 1 ? G->in_off : G->out_off, *adj = d == 1 ? G->in_adj : G->out_adj;
            for (int e = off[i]; e < off[i + 1]; e++) {
                int j = adj[e];
                if (G->seen[j] == stamp || !enter(arg, root, j)) continue;
                G->seen[j] = stamp;
                G->stack[sp++] = j;
            }
        }
    }
}

typedef struct paint {
    const vg__plan *p;
    const int *list;
    const bool *proc;
    char *white, *black, *up_bg, *down_w, *up_w, *clear_prop;
} paint;

static bool enter_up_bg(void *a, int root, int j) {
    paint *P = a;
    (void)root;
    return !P->up_bg[j] && P->list[j] == L_CLEAR;
}
static void visit_up_bg(void *a, int j) { ((paint *)a)->up_bg[j] = 1; }
static bool enter_black(void *a, int root, int j) {
    paint *P = a;
    (void)root;
    return !P->black[j] && P->up_bg[j];
}
static void visit_black(void *a, int j) { ((paint *)a)->black[j] = 1; }
static bool between_ok(const paint *P, int j) {
    return !P->black[j] && P->proc[j] && (P->list[j] == L_CLEAR || P->list[j] == L_INFER);
}
static bool enter_down_w(void *a, int root, int j) {
    paint *P = a;
    (void)root;
    return !P->down_w[j] && between_ok(P, j);
}
static void visit_down_w(void *a, int j) { ((paint *)a)->down_w[j] = 1; }
static bool enter_up_w(void *a, int root, int j) {
    paint *P = a;
    (void)root;
    return !P->up_w[j] && between_ok(P, j);
}
static void visit_up_w(void *a, int j) {
    paint *P = a;
    P->up_w[j] = 1;
    if (P->down_w[j] && !P->black[j]) P->white[j] = 1;
}
static bool enter_clear(void *a, int root, int j) {
    paint *P = a;
    (void)root;
    return !P->white[j] && !P->black[j] && P->proc[j] && P->list[j] == L_CLEAR && !P->clear_prop[j];
}
static void visit_clear(void *a, int j) {
    paint *P = a;
    P->clear_prop[j] = 1;
    P->white[j] = 1;
}

static bool float_t_attr(const vg_op *op) {
    vg_dtype t;
    if (vg_op_attr_type_(op, "T", &t)) return t == VG_FLOAT;
    if (!strcmp(vg_op_type(op), "Cast") && vg_op_attr_type_(op, "DstT", &t)) return t == VG_FLOAT;
    return false;
}

bool vg__amp_paint(vg__plan *p) {
    int n = p->nnodes;
    bool ok = false;
    int *prod = vg__plan_slot_producers(p);
    int *list = vg__calloc((size_t)n + 1, sizeof(int));
    bool *proc = vg__calloc((size_t)n + 1, sizeof(bool));
    char *sets = vg__calloc((size_t)n * 6 + 1, 1);
    amp_graph G = {n, vg__calloc((size_t)n + 2, sizeof(int)), NULL, vg__calloc((size_t)n + 2, sizeof(int)), NULL,
                   vg__malloc(sizeof(int) * ((size_t)n + 1)), vg__calloc((size_t)n + 1, sizeof(int)), 0};
    int nedges = 0;
    if (!prod || !list || !proc || !sets || !G.in_off || !G.out_off || !G.stack || !G.seen) goto out;
    /* float32 data edges */
    for (int i = 0; i < n; i++) {
        const vg__node *nd = &p->nodes[i];
        for (int k = 0; k < nd->ninputs; k++) {
            int sl = nd->in_slot[k];
            if (sl < 0 || prod[sl] < 0 || vg_output_dtype(vg_op_input(nd->op, k)) != VG_FLOAT) continue;
            G.in_off[i + 1]++;
            G.out_off[prod[sl] + 1]++;
            nedges++;
        }
    }
    for (int i = 0; i < n; i++) G.in_off[i + 1] += G.in_off[i], G.out_off[i + 1] += G.out_off[i];
    G.in_adj = vg__malloc(sizeof(int) * ((size_t)nedges + 1));
    G.out_adj = vg__malloc(sizeof(int) * ((size_t)nedges + 1));
    int *fill = vg__calloc((size_t)n + 1, sizeof(int));
    if (!G.in_adj || !G.out_adj || !fill) {
        vg__free(fill);
        goto out;
    }
    for (int i = 0; i < n; i++) {
        const vg__node *nd = &p->nodes[i];
        int e = G.in_off[i];
        for (int k = 0; k < nd->ninputs; k++) {
            int sl = nd->in_slot[k];
            if (sl < 0 || prod[sl] < 0 || vg_output_dtype(vg_op_input(nd->op, k)) != VG_FLOAT) continue;
            G.in_adj[e++] = prod[sl];
            G.out_adj[G.out_off[prod[sl]] + fill[prod[sl]]++] = i;
        }
    }
    vg__free(fill);
    /* lists and ShouldProcess: a kernel node with a float32 T, not fetched */
    for (int i = 0; i < n; i++) {
        const vg__node *nd = &p->nodes[i];
        list[i] = vg__amp_list_of(nd->def->type);
        proc[i] = nd->kind == VG__K_KERNEL && float_t_attr(nd->op);
    }
    for (int f = 0; f < p->nfetches; f++) {
        int sl = p->fetch_slot[f];
        if (sl >= 0 && prod[sl] >= 0) proc[prod[sl]] = false;
    }
    paint P = {p, list, proc, sets, sets + n, sets + 2 * n, sets + 3 * n, sets + 4 * n, sets + 5 * n};
    /* 1. AddWhitelistOps */
    for (int i = 0; i < n; i++)
        if (list[i] == L_ALLOW && proc[i]) P.white[i] = 1;
    /* 2. PropagateBlackFwdThroughClearAndGray: the clear nodes upstream of a deny or
     * infer node; deny spreads forward from deny nodes through them (and the infer/deny
     * nodes at their ends). */
    for (int i = 0; i < n; i++)
        if (proc[i] && (list[i] == L_DENY || list[i] == L_INFER)) dfs(&G, i, 1, enter_up_bg, visit_up_bg, &P);
    for (int i = 0; i < n; i++)
        if (proc[i] && list[i] == L_DENY) dfs(&G, i, 2, enter_black, visit_black, &P);
    /* 3. AddClearAndGrayToWhiteIfBetweenWhite */
    for (int i = 0; i < n; i++)
        if (P.white[i]) dfs(&G, i, 2, enter_down_w, visit_down_w, &P);
    for (int i = 0; i < n; i++)
        if (P.white[i]) dfs(&G, i, 1, enter_up_w, visit_up_w, &P);
    /* 4. PropagateWhiteThroughClear (both directions) */
    for (int i = 0; i < n; i++)
        if (P.white[i] && !P.clear_prop[i]) dfs(&G, i, 3, enter_clear, visit_clear, &P);
    /* 5. MakeCastsWhiteIfAllOutputsWhite */
    for (int i = 0; i < n; i++) {
        if (!proc[i] || strcmp(p->nodes[i].def->type, "Cast") || G.out_off[i] == G.out_off[i + 1]) continue;
        bool all = true;
        for (int e = G.out_off[i]; e < G.out_off[i + 1] && all; e++) all = P.white[G.out_adj[e]];
        if (all) P.white[i] = 1;
    }
    /* the nodes: which inputs to round (the Casts TF inserts) */
    ok = true;
    for (int i = 0; i < n && ok; i++) {
        vg__node *nd = &p->nodes[i];
        nd->amp = P.white[i] && !P.black[i];
        if (!nd->amp) continue;
        if (!(nd->amp_round = vg__calloc((size_t)nd->ninputs + 1, sizeof(bool)))) {
            ok = false;
            break;
        }
        /* MatMul rounds its operands itself while converting them to bfloat16 (bf16_dnnl.c) */
        bool native = !strcmp(nd->def->type, "MatMul");
        const int *tin = t_inputs(nd->def->type);
        for (int k = 0; k < nd->ninputs && !native; k++) {
            int sl = nd->in_slot[k];
            if (sl < 0 || vg_output_dtype(vg_op_input(nd->op, k)) != VG_FLOAT || !listed(tin, k)) continue;
            /* from an unpainted node, or a painted one's U output (a batch norm's
             * statistics: float32, TF's Cast to bfloat16 on that edge) */
            const vg__node *pn = prod[sl] >= 0 ? &p->nodes[prod[sl]] : NULL;
            nd->amp_round[k] = !pn || !P.white[prod[sl]] || P.black[prod[sl]] ||
                               !listed(t_outputs(pn->def->type), sl - pn->out_base);
        }
    }
out:
    vg__free(prod);
    vg__free(list);
    vg__free(proc);
    vg__free(sets);
    vg__free(G.in_off);
    vg__free(G.out_off);
    vg__free(G.in_adj);
    vg__free(G.out_adj);
    vg__free(G.stack);
    vg__free(G.seen);
    return ok;
}

void vg__amp_round_f32(const float *src, float *dst, size_t n) { vg__bf16_round_n(src, dst, n); }

/* A float32 copy of t rounded to bfloat16 values (one reference), NULL on OOM. */
static vg_tensor *rounded_copy(const vg_tensor *t, vg_status *st) {
    int nd = vg_tensor_ndims(t);
    int64_t dims[VG_MAX_DIMS];
    for (int i = 0; i < nd; i++) dims[i] = vg_tensor_dim(t, i);
    vg_tensor *r = vg_tensor_new(VG_FLOAT, dims, nd, st);
    if (r) vg__amp_round_f32(vg_tensor_data(t), vg_tensor_data(r), (size_t)vg_tensor_num_elements(t));
    return r;
}

vg_code vg__amp_round_inputs(vg__node *n, vg_tensor **vals, vg_status *st) {
    for (int k = 0; k < n->ninputs; k++) {
        int sl = n->in_slot[k];
        if (!n->amp_round[k] || sl < 0 || !vals[sl] || vg__val_is_ref(vals[sl]) ||
            vg_tensor_dtype(vals[sl]) != VG_FLOAT)
            continue;
        vg_tensor *r = rounded_copy(vals[sl], st);
        if (!r) return st->code ? st->code : vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory");
        vg_tensor_free(vals[sl]);
        vals[sl] = r;
    }
    return VG_OK;
}

vg_code vg__amp_round_outputs(vg__node *n, vg_tensor **vals, vg_tensor **outs, vg_status *st) {
    const char *type = vg_op_type(n->op); /* the op as built: a fused node keeps it */
    if (rounds_itself(type)) return VG_OK;
    const int *tout = t_outputs(type);
    for (int i = 0; i < n->noutputs; i++) {
        vg_tensor *t = outs[i];
        if (!t || vg__val_is_ref(t) || vg_tensor_dtype(t) != VG_FLOAT || !listed(tout, i)) continue;
        const void *d = vg_tensor_data(t);
        bool shared = vg__tensor_refcount(t) > 1;
        for (int k = 0; k < n->ninputs && !shared; k++) {
            int sl = n->in_slot[k];
            const vg_tensor *in = sl >= 0 ? vals[sl] : NULL;
            shared = in && !vg__val_is_ref(in) && vg_tensor_nbytes(in) && vg_tensor_data(in) == d;
        }
        if (!shared) {
            vg__amp_round_f32(d, vg_tensor_data(t), (size_t)vg_tensor_num_elements(t));
            continue;
        }
        vg_tensor *r = rounded_copy(t, st);
        if (!r) return st->code ? st->code : vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory");
        vg_tensor_free(t);
        outs[i] = r;
    }
    return VG_OK;
}
