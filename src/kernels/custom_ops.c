/*
 * custom_ops.c - ops from user code (vigil/custom_op.h): the registration of op types
 * at run time (trampolines from the registry's function slots to the user's functions,
 * found by op type), and the PyFunc / PyFuncStateless family: tf.py_func with a C
 * callback identified by the op's "token" attr ("pyfunc_<n>"), as TF's
 * script_ops.FuncRegistry identifies Python functions.
 */
#include "kernels/kernel.h"
#include "vigil/custom_op.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- registered op types --------------------------------------------------------- */

typedef struct custom_entry {
    vg__op_def def;        /* handed to the registry; lives for the process */
    vg_custom_op_def user; /* type points to def.type */
} custom_entry;

static custom_entry **g_entries;
static int g_nentries, g_entries_cap;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

static const custom_entry *entry_of(const char *type) {
    const custom_entry *e = NULL;
    pthread_mutex_lock(&g_mu);
    for (int i = 0; i < g_nentries && !e; i++)
        if (strcmp(g_entries[i]->def.type, type) == 0) e = g_entries[i];
    pthread_mutex_unlock(&g_mu);
    return e;
}

static vg_code tramp_shape(vg_op *op, vg_status *st) {
    const custom_entry *e = entry_of(vg_op_type(op));
    if (!e) return vg_status_set(st, VG_INTERNAL, "custom op %s is not registered", vg_op_type(op));
    vg__op_set_num_outputs(op, 1);
    if (!e->user.shape) {
        vg_dtype dt = vg_op_num_inputs(op) > 0 ? vg__op_input_dtype(op, 0) : VG_FLOAT;
        vg__op_set_output(op, 0, dt, vg_op_num_inputs(op) > 0 ? vg__op_input_shape(op, 0) : vg_shape_unknown());
        return VG_OK;
    }
    vg_code c = e->user.shape(op, st, e->user.user);
    if (c != VG_OK && st->code == VG_OK) vg_status_set(st, c, "shape function of %s failed", vg_op_type(op));
    return c;
}

static vg_code tramp_kernel(vg__kctx *ctx) {
    const vg_op *op = vg__kctx_op(ctx);
    vg_status *st = vg__kctx_status(ctx);
    const custom_entry *e = entry_of(vg_op_type(op));
    if (!e) return vg_status_set(st, VG_INTERNAL, "custom op %s is not registered", vg_op_type(op));
    vg_code c = e->user.kernel((vg_custom_kernel_ctx *)ctx, e->user.user);
    if (c != VG_OK && st->code == VG_OK) vg_status_set(st, c, "kernel of %s failed (%s)", vg_op_type(op), vg_code_name(c));
    if (c == VG_OK && st->code != VG_OK) c = st->code;
    return c;
}

static vg_code tramp_grad(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    const custom_entry *e = entry_of(vg_op_type(op));
    if (!e || !e->user.grad) return VG_INVALID_ARGUMENT; /* vg_gradients: "No gradient defined" */
    vg_code c = e->user.grad(g, op, dy, dx, e->user.user);
    return c != VG_OK ? c : vg_graph_status(g, NULL);
}

vg_code vg_register_op(const vg_custom_op_def *def, vg_status *st) {
    vg_status local;
    if (!st) st = &local;
    if (!def || !def->type || !*def->type || !def->kernel)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_register_op: a type and a kernel are required");
    if (def->min_inputs < 0 || (def->max_inputs >= 0 && def->max_inputs < def->min_inputs))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_register_op %s: bad input counts [%d, %d]", def->type,
                             def->min_inputs, def->max_inputs);
    custom_entry *e = calloc(1, sizeof *e);
    char *type = e ? strdup(def->type) : NULL;
    if (!e || !type) {
        free(e);
        free(type);
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory registering op %s", def->type);
    }
    e->user = *def;
    e->user.type = type;
    e->def.type = type;
    e->def.min_inputs = def->min_inputs;
    e->def.max_inputs = def->max_inputs;
    e->def.flags = def->stateful ? VG__OP_STATEFUL : 0;
    e->def.shape = tramp_shape;
    e->def.kernel = tramp_kernel;
    e->def.grad = def->grad ? tramp_grad : NULL;
    /* the entry first (so a concurrent lookup finds the functions), then the registry */
    pthread_mutex_lock(&g_mu);
    bool ok = true;
    if (g_nentries == g_entries_cap) {
        int cap = g_entries_cap ? g_entries_cap * 2 : 8;
        custom_entry **p = realloc(g_entries, sizeof(*g_entries) * (size_t)cap);
        if (!p) ok = false;
        else {
            g_entries = p;
            g_entries_cap = cap;
        }
    }
    if (ok) g_entries[g_nentries++] = e;
    pthread_mutex_unlock(&g_mu);
    if (!ok) {
        free(type);
        free(e);
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory registering op %s", def->type);
    }
    vg_code c = vg__registry_add_custom(&e->def);
    if (c != VG_OK) {
        pthread_mutex_lock(&g_mu);
        g_nentries--; /* it is the last one unless another registration raced it */
        for (int i = 0; i < g_nentries; i++)
            if (g_entries[i] == e) g_entries[i] = g_entries[g_nentries];
        pthread_mutex_unlock(&g_mu);
        free(type);
        free(e);
        if (c == VG_ALREADY_EXISTS)
            return vg_status_set(st, VG_ALREADY_EXISTS, "Op type %s is already registered", def->type);
        return vg_status_set(st, c, "registering op %s failed", def->type);
    }
    vg_status_clear(st);
    return VG_OK;
}

/* ---- the kernel context and shape helpers ---------------------------------------- */

const vg_op *vg_custom_kernel_op(const vg_custom_kernel_ctx *ctx) { return vg__kctx_op((const vg__kctx *)ctx); }
int vg_custom_num_inputs(const vg_custom_kernel_ctx *ctx) { return vg__kctx_num_inputs((const vg__kctx *)ctx); }
const vg_tensor *vg_custom_input(const vg_custom_kernel_ctx *ctx, int i) {
    if (!ctx || i < 0 || i >= vg__kctx_num_inputs((const vg__kctx *)ctx)) return NULL;
    return vg__kctx_input((const vg__kctx *)ctx, i);
}
vg_tensor *vg_custom_alloc_output(vg_custom_kernel_ctx *ctx, int i, vg_dtype dt, const int64_t *dims, int ndims) {
    vg__kctx *k = (vg__kctx *)ctx;
    if (i < 0 || i >= vg_op_num_outputs(vg__kctx_op(k))) {
        vg_status_set(vg__kctx_status(k), VG_INVALID_ARGUMENT, "output index %d out of range", i);
        return NULL;
    }
    vg_tensor *t = NULL;
    return vg__kctx_alloc_output(k, i, dt, dims, ndims, &t) == VG_OK ? t : NULL;
}
vg_code vg_custom_set_output(vg_custom_kernel_ctx *ctx, int i, vg_tensor *t) {
    vg__kctx *k = (vg__kctx *)ctx;
    if (!t || i < 0 || i >= vg_op_num_outputs(vg__kctx_op(k))) {
        vg_tensor_free(t);
        return vg_status_set(vg__kctx_status(k), VG_INVALID_ARGUMENT, "output index %d out of range (or NULL tensor)", i);
    }
    vg__kctx_set_output(k, i, t);
    return VG_OK;
}
vg_status *vg_custom_status(vg_custom_kernel_ctx *ctx) { return vg__kctx_status((vg__kctx *)ctx); }

void vg_custom_shape_set_num_outputs(vg_op *op, int n) { vg__op_set_num_outputs(op, n); }
void vg_custom_shape_set_output(vg_op *op, int i, vg_dtype dt, vg_shape shape) { vg__op_set_output(op, i, dt, shape); }

/* ---- PyFunc / PyFuncStateless ------------------------------------------------------ */

typedef struct py_entry {
    vg_py_func_fn fn;
    void *user;
    vg_custom_grad_fn grad;
    void *grad_user;
} py_entry;

static py_entry *g_py;
static int g_npy, g_py_cap;

static bool py_lookup(const vg_op *op, py_entry *out) {
    const char *tok;
    size_t len;
    if (!vg_op_attr_string(op, "token", &tok, &len) || len < 8 || strncmp(tok, "pyfunc_", 7) != 0) return false;
    char buf[32];
    if (len >= sizeof buf) return false;
    memcpy(buf, tok, len);
    buf[len] = 0;
    char *end;
    long id = strtol(buf + 7, &end, 10);
    bool ok = false;
    pthread_mutex_lock(&g_mu);
    if (*end == 0 && id >= 0 && id < g_npy) {
        *out = g_py[id];
        ok = true;
    }
    pthread_mutex_unlock(&g_mu);
    return ok;
}

static vg_code shape_py_func(vg_op *op, vg_status *st) {
    const vg_dtype *tin = NULL, *tout = NULL;
    int nin = 0, nout = 0;
    vg_op_attr_type_list(op, "Tin", &tin, &nin);
    if (!vg_op_attr_type_list(op, "Tout", &tout, &nout))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s needs a Tout attr", vg_op_type(op));
    if (nin != vg_op_num_inputs(op))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: Tin has %d types for %d inputs", vg_op_type(op), nin,
                             vg_op_num_inputs(op));
    for (int i = 0; i < nin; i++)
        if (tin[i] != vg__op_input_dtype(op, i))
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: input %d is %s, Tin says %s", vg_op_type(op), i,
                                 vg_dtype_name(vg__op_input_dtype(op, i)), vg_dtype_name(tin[i]));
    vg__op_set_num_outputs(op, nout);
    for (int i = 0; i < nout; i++) vg__op_set_output(op, i, tout[i], vg_shape_unknown());
    return VG_OK;
}

static vg_code kernel_py_func(vg__kctx *ctx) {
    const vg_op *op = vg__kctx_op(ctx);
    vg_status *st = vg__kctx_status(ctx);
    py_entry e;
    if (!py_lookup(op, &e)) return vg_status_set(st, VG_INVALID_ARGUMENT, "callback for %s is not registered", vg_op_name(op));
    const vg_dtype *tout = NULL;
    int nout = 0, nin = vg__kctx_num_inputs(ctx);
    vg_op_attr_type_list(op, "Tout", &tout, &nout);
    const vg_tensor *ins[64];
    vg_tensor *outs[64];
    if (nin > 64 || nout > 64) return vg_status_set(st, VG_UNIMPLEMENTED, "%s: more than 64 inputs or outputs", vg_op_name(op));
    for (int i = 0; i < nin; i++) ins[i] = vg__kctx_input(ctx, i);
    for (int i = 0; i < nout; i++) outs[i] = NULL;
    vg_status cst;
    vg_status_clear(&cst);
    vg_code c = e.fn(ins, nin, outs, nout, e.user, &cst);
    if (c == VG_OK && cst.code != VG_OK) c = cst.code;
    if (c != VG_OK) {
        if (cst.code != VG_OK) vg_status_copy(st, &cst);
        else vg_status_set(st, c, "callback of %s failed (%s)", vg_op_name(op), vg_code_name(c));
    }
    for (int i = 0; c == VG_OK && i < nout; i++) {
        if (!outs[i]) c = vg_status_set(st, VG_INVALID_ARGUMENT, "%s: the callback returned no tensor for output %d",
                                        vg_op_name(op), i);
        else if (vg_tensor_dtype(outs[i]) != tout[i])
            c = vg_status_set(st, VG_INVALID_ARGUMENT,
                              "%s: the callback returned a %s tensor for output %d, expected %s", vg_op_name(op),
                              vg_dtype_name(vg_tensor_dtype(outs[i])), i, vg_dtype_name(tout[i]));
    }
    for (int i = 0; i < nout; i++) {
        if (c == VG_OK) vg__kctx_set_output(ctx, i, outs[i]);
        else vg_tensor_free(outs[i]);
    }
    return c;
}

static vg_code grad_py_func(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    py_entry e;
    if (!py_lookup(op, &e) || !e.grad) return VG_INVALID_ARGUMENT; /* vg_gradients: "No gradient defined" */
    vg_code c = e.grad(g, op, dy, dx, e.grad_user);
    return c != VG_OK ? c : vg_graph_status(g, NULL);
}

vg_op *vg_py_func(vg_graph *g, vg_py_func_fn fn, void *user, const vg_output *inputs, int nin, const vg_dtype *Tout,
                  int nout, bool stateful, vg_custom_grad_fn grad, void *grad_user, const char *name) {
    if (!g) return NULL;
    if (!fn || nin < 0 || nout < 0 || (nin > 0 && !inputs) || (nout > 0 && !Tout) || nin > 64 || nout > 64) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "py_func: a callback, inputs and Tout (at most 64 each) are required");
        return NULL;
    }
    pthread_mutex_lock(&g_mu);
    int id = -1;
    if (g_npy == g_py_cap) {
        int cap = g_py_cap ? g_py_cap * 2 : 16;
        py_entry *p = realloc(g_py, sizeof(*g_py) * (size_t)cap);
        if (p) {
            g_py = p;
            g_py_cap = cap;
        }
    }
    if (g_npy < g_py_cap) {
        id = g_npy++;
        g_py[id] = (py_entry){fn, user, grad, grad_user};
    }
    pthread_mutex_unlock(&g_mu);
    if (id < 0) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory in py_func");
        return NULL;
    }
    char token[32];
    snprintf(token, sizeof token, "pyfunc_%d", id);
    vg_dtype tin[64];
    for (int i = 0; i < nin; i++) tin[i] = vg_output_dtype(inputs[i]);
    vg_op_builder *b = vg_op_builder_new(g, stateful ? "PyFunc" : "PyFuncStateless", name ? name : "PyFunc");
    if (!b) return NULL;
    if (nin) vg_op_builder_add_inputs(b, inputs, nin);
    vg_op_builder_set_attr_string(b, "token", token, strlen(token));
    vg_op_builder_set_attr_type_list(b, "Tin", tin, nin);
    vg_op_builder_set_attr_type_list(b, "Tout", Tout, nout);
    return vg_op_builder_finish(b);
}

const vg__op_def vg__ops_custom[] = {
    {"PyFunc", 0, -1, VG__OP_STATEFUL, 0, shape_py_func, kernel_py_func, grad_py_func},
    {"PyFuncStateless", 0, -1, 0, 0, shape_py_func, kernel_py_func, grad_py_func},
    {0},
};
