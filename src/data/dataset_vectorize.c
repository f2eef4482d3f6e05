/*
 * dataset_vectorize.c - a map function over a block of elements (tf.data's
 * map_vectorization / map_and_batch idea, done inside the map iterator).
 *
 * vg__ds_fn_vectorize rewrites a map function graph into one whose every argument and
 * output has an extra leading dimension: run once over n stacked elements, it gives
 * the n per-element results stacked. Only ops whose batched form is known are
 * rewritten; any other op reachable from the outputs leaves fn->vec NULL and the map
 * runs element by element as before:
 *   - the arguments become placeholders with a leading -1 dimension;
 *   - Const (and whitelisted pure ops of unbatched inputs only) are copied unbatched;
 *   - elementwise unary ops (Cast, Identity, Neg, Relu, ...) and DecodeRaw are copied;
 *   - elementwise binary ops are copied when broadcasting lines up: both inputs
 *     batched with the same static per-element rank, or the unbatched one of a rank
 *     no larger than the batched one's per-element rank;
 *   - Reshape by a Const shape without -1 gets the shape [-1] + shape;
 *   - ParseSingleExample without sparse features becomes ParseExample (the dense
 *     outputs gain the batch dimension; the keys are Const inputs).
 * The iterator falls back to per-element runs for a block whose batched run fails, so
 * errors (and the elements before them) are exactly those of the per-element map.
 */
#include "data/dataset.h"
#include "vigil/ops.h"
#include <stdio.h>

static const char *const k_unary[] = {
    "Cast", "Identity", "StopGradient", "Neg", "Abs", "Square", "Sqrt", "Rsqrt", "Exp", "Log", "Log1p", "Expm1",
    "Relu", "Relu6", "Elu", "Selu", "Softplus", "Sigmoid", "Tanh", "Floor", "Ceil", "Round", "Rint", "Sign",
    "Reciprocal", "Inv", "LogicalNot", "IsNan", "IsInf", "IsFinite", "Sin", "Cos", "OnesLike", "ZerosLike", NULL};
static const char *const k_binary[] = {
    "Add", "AddV2", "Sub", "Mul", "Div", "RealDiv", "DivNoNan", "FloorDiv", "FloorMod", "TruncateDiv",
    "TruncateMod", "Maximum", "Minimum", "Pow", "SquaredDifference", "Equal", "NotEqual", "Less", "LessEqual",
    "Greater", "GreaterEqual", "LogicalAnd", "LogicalOr", NULL};

static bool in_list(const char *const *l, const char *s) {
    for (; *l; l++)
        if (!strcmp(*l, s)) return true;
    return false;
}


typedef struct vnode {
    vg_op *op;     /* the op in the vectorized graph */
    bool batched;  /* its outputs carry the leading batch dimension */
    bool reach;    /* needed by an output of the function */
} vnode;

static vg_output vin(const vnode *m, const vg_op *op, int i) {
    vg_output o = vg_op_input(op, i);
    return vg_out(m[vg_op_id(o.op)].op, o.index);
}

static bool in_batched(const vnode *m, const vg_op *op, int i) { return m[vg_op_id(vg_op_input(op, i).op)].batched; }

/* op copied with the same inputs (mapped) and attrs */
static vg_op *copy_op(vg_graph *vg, const vnode *m, const vg_op *op) {
    vg_op_builder *b = vg_op_builder_new(vg, vg_op_type(op), vg_op_name(op));
    for (int i = 0; i < vg_op_num_inputs(op); i++) vg_op_builder_add_input(b, vin(m, op, i));
    vg_op_builder_copy_attrs(b, op);
    return vg_op_builder_finish(b);
}

/* Reshape(x, Const shape without -1) -> Reshape(x, [-1] + shape) */
static vg_op *vec_reshape(vg_graph *vg, const vnode *m, const vg_op *op) {
    vg_output sh = vg_op_input(op, 1);
    const vg_tensor *t;
    if (in_batched(m, op, 1) || strcmp(vg_op_type(sh.op), "Const") || !vg_op_attr_tensor(sh.op, "value", &t) ||
        vg_tensor_ndims(t) != 1 || vg_tensor_dim(t, 0) + 1 > VG_MAX_DIMS)
        return NULL;
    int64_t n = vg_tensor_dim(t, 0), dims[VG_MAX_DIMS + 1];
    dims[0] = -1;
    for (int64_t i = 0; i < n; i++) {
        if (vg_tensor_dtype(t) == VG_INT32) dims[1 + i] = ((const int32_t *)vg_tensor_data(t))[i];
        else if (vg_tensor_dtype(t) == VG_INT64) dims[1 + i] = ((const int64_t *)vg_tensor_data(t))[i];
        else return NULL;
        if (dims[1 + i] < 0) return NULL;
    }
    vg_status st;
    int64_t len = n + 1;
    vg_tensor *nt = vg_tensor_new(vg_tensor_dtype(t), &len, 1, &st);
    if (!nt) return NULL;
    for (int64_t i = 0; i < len; i++) {
        if (vg_tensor_dtype(t) == VG_INT32) ((int32_t *)vg_tensor_data(nt))[i] = (int32_t)dims[i];
        else ((int64_t *)vg_tensor_data(nt))[i] = dims[i];
    }
    char nm[64];
    snprintf(nm, sizeof nm, "vectorized/shape_%d", vg_op_id(op));
    vg_output c = vg_const(vg, nt, nm);
    vg_tensor_free(nt);
    vg_op_builder *b = vg_op_builder_new(vg, "Reshape", vg_op_name(op));
    vg_op_builder_add_input(b, vin(m, op, 0));
    vg_op_builder_add_input(b, c);
    vg_op_builder_copy_attrs(b, op);
    return vg_op_builder_finish(b);
}

/* ParseSingleExample(serialized, dense_defaults...) with num_sparse 0 ->
 * ParseExample(serialized, names [0], dense_keys..., dense_defaults...) */
static vg_op *vec_parse_single(vg_graph *vg, const vnode *m, const vg_op *op) {
    int64_t ns = -1;
    const char *const *dk;
    int nd;
    const vg_dtype *tdense;
    const vg_shape *shapes;
    int nt, nsh;
    if (!vg_op_attr_int(op, "num_sparse", &ns) || ns != 0 || !vg_op_attr_string_list(op, "dense_keys", &dk, &nd) ||
        !vg_op_attr_type_list(op, "Tdense", &tdense, &nt) || !vg_op_attr_shape_list(op, "dense_shapes", &shapes, &nsh) ||
        nt != nd || nsh != nd || vg_op_num_inputs(op) != 1 + nd || !in_batched(m, op, 0))
        return NULL;
    for (int d = 0; d < nd; d++)
        if (in_batched(m, op, 1 + d)) return NULL;
    char nm[64];
    snprintf(nm, sizeof nm, "vectorized/names_%d", vg_op_id(op));
    int64_t zero = 0;
    vg_tensor *t = vg_tensor_new(VG_STRING, &zero, 1, NULL);
    if (!t) return NULL;
    vg_output names = vg_const(vg, t, nm);
    vg_tensor_free(t);
    vg_op_builder *b = vg_op_builder_new(vg, "ParseExample", vg_op_name(op));
    vg_op_builder_add_input(b, vin(m, op, 0));
    vg_op_builder_add_input(b, names);
    for (int d = 0; d < nd; d++) {
        snprintf(nm, sizeof nm, "vectorized/key_%d_%d", vg_op_id(op), d);
        vg_op_builder_add_input(b, vg_const_string(vg, dk[d], nm));
    }
    for (int d = 0; d < nd; d++) vg_op_builder_add_input(b, vin(m, op, 1 + d));
    vg_op_builder_set_attr_int(b, "Nsparse", 0);
    vg_op_builder_set_attr_int(b, "Ndense", nd);
    vg_op_builder_set_attr_type_list(b, "sparse_types", NULL, 0);
    vg_op_builder_set_attr_type_list(b, "Tdense", tdense, nd);
    vg_op_builder_set_attr_shape_list(b, "dense_shapes", shapes, nd);
    return vg_op_builder_finish(b);
}

/* Elementwise binary: broadcasting of the batched form matches the per-element one. */
static bool binary_ok(const vnode *m, const vg_op *op) {
    if (vg_op_num_inputs(op) != 2) return false;
    bool b0 = in_batched(m, op, 0), b1 = in_batched(m, op, 1);
    int r0 = vg_output_shape(vg_op_input(op, 0)).ndims, r1 = vg_output_shape(vg_op_input(op, 1)).ndims;
    if (r0 < 0 || r1 < 0) return false;
    if (b0 && b1) return r0 == r1;
    return b0 ? r1 <= r0 : r0 <= r1;
}

bool vg__ds_fn_vectorize(vg__ds_fn *fn) {
    /* a function with captured values runs element by element (its captures would be
     * unbatched inputs of the batched form) */
    if (fn->ncap > 0) return false;
    vg_graph *g = fn->g;
    int nops = vg_graph_num_ops(g);
    vnode *m = vg__calloc((size_t)(nops ? nops : 1), sizeof *m);
    vg_graph *vg = m ? vg_graph_new() : NULL;
    bool ok = vg != NULL;
    /* reachability from the outputs (inputs always have smaller ids: graphs are built
     * in order; anything else is refused) */
    for (int i = 0; ok && i < fn->nouts; i++) m[vg_op_id(fn->outs[i].op)].reach = true;
    for (int id = nops - 1; ok && id >= 0; id--) {
        const vg_op *op = vg_graph_op(g, id);
        if (!m[id].reach) continue;
        if (vg_op_num_control_inputs(op) > 0) ok = false;
        for (int i = 0; ok && i < vg_op_num_inputs(op); i++) {
            int in = vg_op_id(vg_op_input(op, i).op);
            if (in >= id) ok = false;
            else m[in].reach = true;
        }
    }
    for (int k = 0; ok && k < fn->nargs; k++) { /* every argument, used or not (all are fed) */
        vg_shape s = vg_output_shape(fn->args[k]);
        bool known = s.ndims >= 0 && s.ndims < VG_MAX_DIMS;
        int64_t dims[VG_MAX_DIMS + 1];
        dims[0] = -1;
        if (known) memcpy(dims + 1, s.dims, sizeof(int64_t) * (size_t)s.ndims);
        char nm[32];
        snprintf(nm, sizeof nm, "arg%d", k);
        fn->vec_args[k] = vg_placeholder(vg, vg_output_dtype(fn->args[k]), known ? dims : NULL, known ? s.ndims + 1 : -1, nm);
        if (!fn->vec_args[k].op || fn->args[k].index != 0 || strcmp(vg_op_type(fn->args[k].op), "Placeholder")) {
            ok = false;
            break;
        }
        m[vg_op_id(fn->args[k].op)].op = fn->vec_args[k].op;
        m[vg_op_id(fn->args[k].op)].batched = true;
    }
    for (int id = 0; ok && id < nops; id++) {
        if (!m[id].reach || m[id].op) continue;
        const vg_op *op = vg_graph_op(g, id);
        const char *type = vg_op_type(op);
        int nb = 0;
        for (int i = 0; i < vg_op_num_inputs(op); i++) nb += in_batched(m, op, i);
        vg_op *nop = NULL;
        bool batched = true;
        if (!strcmp(type, "Placeholder")) {
            ok = false; /* not an argument */
            break;
        } else if (!strcmp(type, "Const")) {
            nop = copy_op(vg, m, op);
            batched = false;
        } else if (nb == 0 && (in_list(k_unary, type) || in_list(k_binary, type) || !strcmp(type, "DecodeRaw") ||
                               !strcmp(type, "Reshape"))) {
            nop = copy_op(vg, m, op); /* pure, of loop-invariant inputs */
            batched = false;
        } else if (in_list(k_unary, type) && vg_op_num_inputs(op) == 1) {
            nop = copy_op(vg, m, op);
        } else if (in_list(k_binary, type)) {
            if (binary_ok(m, op)) nop = copy_op(vg, m, op);
        } else if (!strcmp(type, "DecodeRaw") && vg_op_num_inputs(op) == 1) {
            nop = copy_op(vg, m, op);
        } else if (!strcmp(type, "Reshape") && vg_op_num_inputs(op) == 2 && in_batched(m, op, 0)) {
            nop = vec_reshape(vg, m, op);
        } else if (!strcmp(type, "ParseSingleExample")) {
            nop = vec_parse_single(vg, m, op);
        }
        if (!nop) ok = false;
        else m[id].op = nop, m[id].batched = batched;
    }
    for (int i = 0; ok && i < fn->nouts; i++) {
        const vnode *n = &m[vg_op_id(fn->outs[i].op)];
        if (!n->op || !n->batched) ok = false;
        else fn->vec_outs[i] = vg_out(n->op, fn->outs[i].index);
    }
    if (ok && vg_graph_status(vg, NULL) != VG_OK) ok = false;
    vg__free(m);
    if (!ok) {
        vg_graph_free(vg);
        memset(fn->vec_args, 0, sizeof fn->vec_args);
        memset(fn->vec_outs, 0, sizeof fn->vec_outs);
        return false;
    }
    fn->vec = vg;
    fn->native = vg__ds_native_compile(fn);
    return true;
}
