/*
 * resource_variables.c - TF 1.15's ResourceVariable in graph mode
 * (resource_variable_ops.ResourceVariable._init_from_args), laid out as TF lays it out:
 *
 *   "<name>/Initializer/..."               the initializer's value (from an initializer)
 *   "<name>"                               VarHandleOp, shared_name "<name>"
 *   "<name>/IsInitialized/VarIsInitializedOp"
 *   "<name>/Assign"                        AssignVariableOp(handle, initial value): the initializer
 *   "<name>/Read/ReadVariableOp"           the graph element (v.value())
 *
 * The handle output goes into the collections where a ref variable's ref output goes,
 * so the initializers, savers and optimizers find it; the graph keeps the initializer
 * and the read as the variable's parts (vg_variable_initializer / _snapshot, and a
 * MetaGraphDef's VariableDef with is_resource). As variables.c does, the full
 * name is reserved by creating the VarHandleOp with it and the ops inside are built
 * under the verbatim scope "<name>/"; the variable is created as under TF's init_scope.
 * Built on the public API (and variables.c's guard of initial values).
 */
#include "train_util.h"
#include "variable_internal.h"
#include "vigil/resource_variables.h"
#include <stdio.h>

#define NAME_MAX_LEN 1024

static vg_op *op_named(vg_graph *g, const char *full, const char *suffix) {
    char buf[2 * NAME_MAX_LEN];
    snprintf(buf, sizeof buf, "%s/%s", full, suffix);
    return vg_graph_op_by_name(g, buf);
}

bool vg_is_resource_variable(vg_output v) { return v.op && strcmp(vg_op_type(v.op), "VarHandleOp") == 0; }

/* The VarHandleOp behind handle (through Identity ops), or NULL. */
static vg_op *handle_op_of(vg_output handle) {
    for (int depth = 0; handle.op && depth < 256; depth++) {
        if (vg_is_resource_variable(handle)) return handle.op;
        if (strcmp(vg_op_type(handle.op), "Identity") != 0 || vg_op_num_inputs(handle.op) < 1) return NULL;
        handle = vg_op_input(handle.op, 0);
    }
    return NULL;
}

vg_dtype vg_resource_variable_dtype(vg_output handle) {
    vg_op *op = handle_op_of(handle);
    vg_dtype dt = VG_DTYPE_INVALID;
    if (op) vg_op_attr_type_(op, "dtype", &dt);
    return dt;
}

vg_shape vg_resource_variable_shape(vg_output handle) {
    vg_op *op = handle_op_of(handle);
    vg_shape s = vg_shape_unknown();
    if (op && !vg_op_attr_shape(op, "shape", &s)) s = vg_shape_unknown();
    return s;
}

vg_resource_variable vg_resource_variable_from_handle(vg_output handle) {
    vg_resource_variable v;
    memset(&v, 0, sizeof v);
    if (!vg_is_resource_variable(handle)) return v;
    vg_graph *g = vg_op_graph(handle.op);
    const char *full = vg_op_name(handle.op);
    v.handle_op = handle.op;
    v.handle = vg_out(handle.op, 0);
    v.dtype = vg_resource_variable_dtype(handle);
    v.shape = vg_resource_variable_shape(handle);
    vg_output snap = vg_variable_snapshot(handle.op);
    vg_op *read = snap.op ? snap.op : op_named(g, full, "Read/ReadVariableOp");
    vg_op *init = vg_variable_initializer(handle.op);
    vg_op *isinit = op_named(g, full, "IsInitialized/VarIsInitializedOp");
    if (read) v.value = vg_out(read, 0);
    if (init && strcmp(vg_op_type(init), "AssignVariableOp") == 0) {
        v.initializer = init;
        v.initial_value = vg_op_input(init, 1);
    }
    if (isinit) v.is_initialized = vg_out(isinit, 0);
    return v;
}

typedef vg__train_var_spec rv_spec; /* variable_internal.h */

/* Builds the variable named `full` (absolute). Call with the root scope pushed and
 * the control dependencies set aside. */
static vg_resource_variable build(vg_graph *g, const char *full, const rv_spec *sp) {
    vg_resource_variable v;
    memset(&v, 0, sizeof v);
    vg_output initial = vg__train_spec_initial(g, full, sp);
    if (sp->use_init && !initial.op) return v;
    vg_output h = vg_var_handle_op(g, sp->dt, sp->dims, sp->ndims, "", full, full);
    if (!h.op) return v;
    if (strcmp(vg_op_name(h.op), full) != 0) {
        vg_graph_set_error(g, VG_INTERNAL, "resource variable %s got the op name %s", full, vg_op_name(h.op));
        return v;
    }
    if (!sp->use_init) initial = vg__train_guard_initial_value(g, full, initial);
    vg__train_push_verbatim(g, full);
    vg_graph_push_scope(g, "IsInitialized");
    vg_output isinit = vg_var_is_initialized_op(g, h, NULL);
    vg_graph_pop_scope(g);
    vg_op *assign = vg_assign_variable_op(g, h, initial, "Assign");
    vg_graph_push_scope(g, "Read");
    vg_output read = vg_read_variable_op(g, h, sp->dt, NULL);
    vg_graph_pop_scope(g);
    vg_graph_pop_scope(g);
    if (!isinit.op || !assign || !read.op) return v;
    vg_variable_set_parts(h.op, assign, read, NULL); /* vg_variable_snapshot: the read */
    vg_graph_add_to_collection(g, (sp->flags & VG_VAR_LOCAL) ? VG_LOCAL_VARIABLES : VG_GLOBAL_VARIABLES, h);
    if (sp->flags & VG_VAR_TRAINABLE) vg_graph_add_to_collection(g, VG_TRAINABLE_VARIABLES, h);
    if (vg_graph_status(g, NULL) != VG_OK) return v;
    v.handle_op = h.op;
    v.handle = h;
    v.value = read;
    v.initializer = assign;
    v.initial_value = initial;
    v.is_initialized = isinit;
    v.dtype = sp->dt;
    v.shape = vg_shape_make(sp->dims, sp->ndims);
    return v;
}

/* name_scope(name, "Variable") relative to the current scope, then the variable under
 * TF's init_scope with absolute names. */
static vg_resource_variable make(vg_graph *g, const char *name, const rv_spec *sp) {
    char full[NAME_MAX_LEN];
    vg_graph_unique_name(g, name && *name ? name : "Variable", full, sizeof full);
    vg__train_enter_root(g);
    vg_resource_variable v = build(g, full, sp);
    vg__train_leave_root(g);
    return v;
}

vg_resource_variable vg_resource_variable_new(vg_graph *g, const char *name, vg_output initial_value,
                                              unsigned flags) {
    vg_resource_variable none;
    memset(&none, 0, sizeof none);
    vg_shape s;
    if (!vg__train_check_initial_value(g, "ResourceVariable", name, initial_value, &s)) return none;
    rv_spec sp = {vg_output_dtype(initial_value), s.dims, s.ndims, initial_value, false, vg_init_zeros(), flags};
    return make(g, name, &sp);
}

vg_resource_variable vg_resource_variable_new_init(vg_graph *g, const char *name, vg_dtype dt, const int64_t *dims,
                                                   int ndims, vg_initializer init, unsigned flags) {
    vg_resource_variable none;
    memset(&none, 0, sizeof none);
    if (!g) return none;
    if (ndims < 0 || ndims > VG_MAX_DIMS || (ndims > 0 && !dims)) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "ResourceVariable %s: needs a fully defined shape (rank %d)",
                           name ? name : "Variable", ndims);
        return none;
    }
    rv_spec sp = {dt, dims, ndims, {NULL, 0}, true, init, flags};
    return make(g, name, &sp);
}

/* ------------------------------------------------------------------------ */
/* the variable's methods */

/* The handle's dtype, or a graph error. */
static bool handle_dtype(vg_graph *g, vg_output handle, vg_dtype *dt) {
    *dt = vg_resource_variable_dtype(handle);
    if (*dt != VG_DTYPE_INVALID) return true;
    if (g && vg_graph_status(g, NULL) == VG_OK)
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "'%s' is not a resource variable handle (a VarHandleOp output)",
                           handle.op ? vg_op_name(handle.op) : "(null)");
    return false;
}

vg_output vg_resource_variable_read_value(vg_graph *g, vg_output handle) {
    vg_dtype dt;
    if (!g || !handle_dtype(g, handle, &dt)) return vg_out(NULL, 0);
    vg_graph_push_scope(g, "Read");
    vg_output r = vg_read_variable_op(g, handle, dt, NULL);
    vg_graph_pop_scope(g);
    return r.op ? vg_identity(g, r, NULL) : r;
}

vg_output vg_resource_variable_read_after(vg_graph *g, vg_output handle, vg_op *after) {
    vg_dtype dt;
    if (!g || !handle_dtype(g, handle, &dt)) return vg_out(NULL, 0);
    if (after) vg_graph_push_control_deps(g, &after, 1);
    vg_output r = vg_read_variable_op(g, handle, dt, NULL);
    if (after) vg_graph_pop_control_deps(g);
    return r;
}

vg_op *vg_resource_variable_assign(vg_graph *g, vg_output handle, vg_output value, const char *name) {
    return vg_assign_variable_op(g, handle, value, name);
}
vg_op *vg_resource_variable_assign_add(vg_graph *g, vg_output handle, vg_output value, const char *name) {
    return vg_assign_add_variable_op(g, handle, value, name);
}
vg_op *vg_resource_variable_assign_sub(vg_graph *g, vg_output handle, vg_output value, const char *name) {
    return vg_assign_sub_variable_op(g, handle, value, name);
}

vg_output vg_resource_variable_sparse_read(vg_graph *g, vg_output handle, vg_output indices, const char *name) {
    vg_dtype dt;
    if (!g || !handle_dtype(g, handle, &dt)) return vg_out(NULL, 0);
    /* with ops.name_scope(name or "Gather") as name: resource_gather(..., name=name) */
    char full[NAME_MAX_LEN];
    vg_graph_unique_name(g, name ? name : "Gather", full, sizeof full);
    vg__train_push_verbatim(g, full);
    vg_graph_push_scope(g, "/");
    vg_output r = vg_resource_gather(g, handle, indices, dt, full);
    vg_graph_pop_scope(g);
    vg_graph_pop_scope(g);
    return r.op ? vg_identity(g, r, NULL) : r;
}
