/*
 * state_ops.c - variables and the ops that read or write them (TF's state_ops and
 * Assert): VariableV2, Assign, AssignAdd, AssignSub, IsVariableInitialized, Assert, and
 * vigil's InitializedValueOr (the guard TF builds with a cond, see below).
 *
 * A VariableV2 op owns one slot per session (the executor keeps the slots). Ops that
 * write a variable take it as a ref input (bit set in vg__op_def.ref_inputs) and reach
 * the slot with vg__kctx_var; they hold vg__var_lock while touching the value.
 * Assign stores a reference to the assigned tensor (no copy); AssignAdd/AssignSub
 * update in place through vg__var_mutable, which copies first if anybody else still
 * holds the old value. Output 0 of the writing ops is the variable's new value.
 */
#include "kernels/kernel.h"
#include "vigil/ops.h"
#include <float.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* ------------------------------------------------------------------------ */
/* shared helpers */

/* Checks that input 1 ("value") has the dtype of the ref input 0; sets "T". */
static vg_code check_ref_value_types(vg_op *op, vg_status *st) {
    vg_dtype rt = vg__op_input_dtype(op, 0), vt = vg__op_input_dtype(op, 1);
    if (rt != vt)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Input 'value' of '%s' Op has type %s that does not match type %s of argument 'ref'.",
                             vg_op_type(op), vg_dtype_name(vt), vg_dtype_name(rt));
    vg__op_set_default_attr_type(op, "T", rt);
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* VariableV2 */

static vg_code shape_variable(vg_op *op, vg_status *st) {
    vg_dtype dt;
    vg_shape shape;
    if (!vg_op_attr_type_(op, "dtype", &dt) || (vg_dtype_size(dt) == 0 && dt != VG_STRING))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "VariableV2 needs a valid 'dtype' attr");
    if (!vg_op_attr_shape(op, "shape", &shape)) shape = vg_shape_unknown();
    vg__op_set_default_attr_string(op, "container", "");
    vg__op_set_default_attr_string(op, "shared_name", "");
    return vg__op_set_single_output(op, dt, shape);
}

/* Hands out a new reference of the slot's current value. (The executor normally
 * reads variables itself; this kernel is its fallback.) */
static vg_code kernel_variable(vg__kctx *ctx) {
    vg__var *v = vg__kctx_var(ctx, -1); /* the op's own slot */
    if (!v)
        return vg_status_set(vg__kctx_status(ctx), VG_INTERNAL, "VariableV2 kernel has no variable slot");
    vg__var_lock(v);
    vg_tensor *t = vg_tensor_ref(vg__var_value(v));
    vg__var_unlock(v);
    if (!t)
        return vg_status_set(vg__kctx_status(ctx), VG_FAILED_PRECONDITION,
                             "Attempting to use uninitialized value %s", vg__var_name(v));
    vg__kctx_set_output(ctx, 0, t);
    return VG_OK;
}

/* A variable has no inputs: when it is one of the xs of tf.gradients, the gradient
 * stops at its output (TF's stop ops); nothing to propagate. */
static vg_code grad_variable(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) { return VG_OK; }

vg_output vg_variable_op(vg_graph *g, vg_dtype dt, const int64_t *dims, int ndims, const char *name) {
    vg_op_builder *b = vg_op_builder_new(g, "VariableV2", name);
    vg_op_builder_set_attr_shape(b, "shape", vg_shape_make(dims, ndims));
    vg_op_builder_set_attr_type(b, "dtype", dt);
    vg_op_builder_set_attr_string(b, "container", "", 0);
    vg_op_builder_set_attr_string(b, "shared_name", "", 0);
    return vg_out(vg_op_builder_finish(b), 0);
}

/* ------------------------------------------------------------------------ */
/* Assign(ref, value) */

static vg_code shape_assign(vg_op *op, vg_status *st) {
    if (check_ref_value_types(op, st)) return st->code;
    vg__op_set_default_attr_bool(op, "validate_shape", true);
    vg__op_set_default_attr_bool(op, "use_locking", true);
    bool validate = true;
    vg_op_attr_bool(op, "validate_shape", &validate);
    vg_shape ref = vg__op_input_shape(op, 0), val = vg__op_input_shape(op, 1), out = val;
    if (validate && vg__shape_merge(&ref, &val, &out, st)) return st->code;
    return vg__op_set_single_output(op, vg__op_input_dtype(op, 0), out);
}

static vg_code kernel_assign(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_op *op = vg__kctx_op(ctx);
    vg__var *v = vg__kctx_var(ctx, 0);
    vg_tensor *rhs = vg__kctx_input(ctx, 1);
    bool validate = true;
    char sa[128], sb[128];
    vg_op_attr_bool(op, "validate_shape", &validate);
    vg__var_lock(v);
    vg_tensor *old = vg__var_value(v);
    if (validate) {
        /* An uninitialized variable has its declared shape (as TF's LegacyVar). */
        bool ok;
        if (old) {
            ok = vg__same_dims(old, rhs);
            vg__tshape_str(old, sa, sizeof sa);
        } else {
            vg_shape decl = vg__op_input_shape(op, 0), got = vg_tensor_shape(rhs);
            vg_shape_str(&decl, sa, sizeof sa);
            ok = !vg_shape_is_fully_defined(&decl) ||
                 (decl.ndims == got.ndims &&
                  memcmp(decl.dims, got.dims, sizeof(int64_t) * (size_t)decl.ndims) == 0);
        }
        if (!ok) {
            vg__var_unlock(v);
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "Assign requires shapes of both tensors to match. lhs shape= %s rhs shape= %s", sa,
                                 vg__tshape_str(rhs, sb, sizeof sb));
        }
    }
    vg__var_set(v, vg_tensor_ref(rhs));
    vg__var_unlock(v);
    vg__kctx_set_output(ctx, 0, vg_tensor_ref(rhs));
    return VG_OK;
}

vg_output vg_assign(vg_graph *g, vg_output ref, vg_output value, bool validate_shape, const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, "Assign", name, NULL, (vg_output[]){ref, value}, 2);
    vg_op_builder_set_attr_bool(b, "validate_shape", validate_shape);
    vg_op_builder_set_attr_bool(b, "use_locking", true);
    return vg_out(vg_op_builder_finish(b), 0);
}

/* ------------------------------------------------------------------------ */
/* AssignAdd / AssignSub(ref, value): in place. */

static vg_code shape_assign_update(vg_op *op, vg_status *st) {
    if (check_ref_value_types(op, st)) return st->code;
    vg_dtype dt = vg__op_input_dtype(op, 0);
    if (dt != VG_FLOAT && dt != VG_DOUBLE && dt != VG_INT32 && dt != VG_INT64)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s does not support dtype %s", vg_op_type(op),
                             vg_dtype_name(dt));
    vg__op_set_default_attr_bool(op, "use_locking", false);
    vg_shape ref = vg__op_input_shape(op, 0), val = vg__op_input_shape(op, 1), out;
    if (vg__shape_merge(&ref, &val, &out, st)) return st->code;
    return vg__op_set_single_output(op, dt, out);
}

static vg_code assign_update(vg__kctx *ctx, bool add) {
    vg_status *st = vg__kctx_status(ctx);
    vg__var *v = vg__kctx_var(ctx, 0);
    vg_tensor *val = vg__kctx_input(ctx, 1);
    char sa[128], sb[128];
    vg__var_lock(v);
    vg_tensor *cur = vg__var_mutable(v, st);
    if (!cur) {
        vg__var_unlock(v);
        return st->code;
    }
    if (!vg__same_dims(cur, val)) {
        vg__var_unlock(v);
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Parameters and update must be the same size: %s vs %s",
                             vg__tshape_str(cur, sa, sizeof sa), vg__tshape_str(val, sb, sizeof sb));
    }
    if (!vg__tensor_add_sub_inplace(cur, val, add)) {
        vg__var_unlock(v);
        return vg_status_set(st, VG_INVALID_ARGUMENT, "unsupported dtype %s",
                             vg_dtype_name(vg_tensor_dtype(cur)));
    }
    vg_tensor *out = vg_tensor_ref(cur);
    vg__var_unlock(v);
    vg__kctx_set_output(ctx, 0, out);
    return VG_OK;
}

static vg_code kernel_assign_add(vg__kctx *ctx) { return assign_update(ctx, true); }
static vg_code kernel_assign_sub(vg__kctx *ctx) { return assign_update(ctx, false); }

static vg_output build_update(vg_graph *g, const char *type, vg_output ref, vg_output value, const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, type, name, NULL, (vg_output[]){ref, value}, 2);
    vg_op_builder_set_attr_bool(b, "use_locking", false);
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_output vg_assign_add(vg_graph *g, vg_output ref, vg_output value, const char *name) {
    return build_update(g, "AssignAdd", ref, value, name);
}
vg_output vg_assign_sub(vg_graph *g, vg_output ref, vg_output value, const char *name) {
    return build_update(g, "AssignSub", ref, value, name);
}

/* ------------------------------------------------------------------------ */
/* IsVariableInitialized(ref) -> bool scalar; never fails on an uninitialized slot. */

static vg_code shape_is_initialized(vg_op *op, vg_status *st) {
    vg__op_set_default_attr_type(op, "dtype", vg__op_input_dtype(op, 0));
    return vg__op_set_single_output(op, VG_BOOL, vg_shape_make(NULL, 0));
}

static vg_code kernel_is_initialized(vg__kctx *ctx) {
    vg__var *v = vg__kctx_var(ctx, 0);
    vg_tensor *out;
    if (vg__kctx_alloc_output(ctx, 0, VG_BOOL, NULL, 0, &out)) return vg__kctx_status(ctx)->code;
    vg__var_lock(v);
    *(bool *)vg_tensor_data(out) = vg__var_value(v) != NULL;
    vg__var_unlock(v);
    return VG_OK;
}

vg_output vg_is_variable_initialized(vg_graph *g, vg_output ref, const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, "IsVariableInitialized", name, NULL, (vg_output[]){ref}, 1);
    if (ref.op) vg_op_builder_set_attr_type(b, "dtype", vg_output_dtype(ref));
    return vg_out(vg_op_builder_finish(b), 0);
}

/* ------------------------------------------------------------------------ */
/* InitializedValueOr(ref, default): the variable's value if it is initialized, else
 * default. TF's variables.py guards an initial value that reads another variable with
 * cond(is_variable_initialized(v), v.read_value, v.initial_value)
 * (_try_guard_against_uninitialized_dependencies); vigil has no Switch/Merge, so the
 * cond is one op (default is computed either way, as both branches' inputs exist in
 * TF's graph too). Built by variables.c only. */

static vg_code shape_initialized_value_or(vg_op *op, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, 0);
    if (vg__op_input_dtype(op, 1) != dt)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "InitializedValueOr: default is %s, the variable %s",
                             vg_dtype_name(vg__op_input_dtype(op, 1)), vg_dtype_name(dt));
    vg_shape a = vg__op_input_shape(op, 0), b = vg__op_input_shape(op, 1), s;
    vg_code rc = vg__shape_merge(&a, &b, &s, st);
    if (rc != VG_OK) return rc;
    return vg__op_set_t_output(op, dt, s);
}

static vg_code kernel_initialized_value_or(vg__kctx *ctx) {
    vg__var *v = vg__kctx_var(ctx, 0);
    vg_tensor *val = NULL;
    if (v) {
        vg__var_lock(v);
        val = vg__var_value(v);
        if (val) val = vg_tensor_ref(val);
        vg__var_unlock(v);
    }
    if (!val) {
        vg_tensor *d = vg__kctx_input(ctx, 1);
        if (!d) return vg_status_set(vg__kctx_status(ctx), VG_FAILED_PRECONDITION, "InitializedValueOr: no default");
        val = vg_tensor_ref(d);
    }
    vg__kctx_set_output(ctx, 0, val);
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* Assert(condition, data...) */

static vg_code shape_assert(vg_op *op, vg_status *st) {
    if (vg__op_input_dtype(op, 0) != VG_BOOL)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Assert's condition must be bool, got %s",
                             vg_dtype_name(vg__op_input_dtype(op, 0)));
    vg_shape c = vg__op_input_shape(op, 0);
    if (c.ndims > 1 || (c.ndims == 1 && c.dims[0] > 1))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Assert's condition must be a scalar, got rank %d", c.ndims);
    vg__op_set_default_attr_int(op, "summarize", 3);
    return vg__op_set_no_outputs(op);
}

/* Appends printf output to buf at *pos (truncating silently at len). */
static void appendf(char *buf, size_t len, size_t *pos, const char *fmt, ...) VG_PRINTF(4, 5);
static void appendf(char *buf, size_t len, size_t *pos, const char *fmt, ...) {
    if (*pos >= len) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf + *pos, len - *pos, fmt, ap);
    va_end(ap);
    if (k > 0) *pos += (size_t)k;
    if (*pos > len) *pos = len;
}

/* strings::StrCat's float formatting: shortest of %.{6,15}g / %.{9,17}g that round-trips. */
static void append_elem(char *buf, size_t len, size_t *pos, const vg_tensor *t, int64_t i) {
    const void *d = vg_tensor_data(t);
    char tmp[64];
    switch (vg_tensor_dtype(t)) {
    case VG_FLOAT: {
        float x = ((const float *)d)[i];
        snprintf(tmp, sizeof tmp, "%.*g", FLT_DIG, (double)x);
        if (strtof(tmp, NULL) != x) snprintf(tmp, sizeof tmp, "%.*g", FLT_DIG + 3, (double)x);
        appendf(buf, len, pos, "%s", tmp);
        break;
    }
    case VG_DOUBLE: {
        double x = ((const double *)d)[i];
        snprintf(tmp, sizeof tmp, "%.*g", DBL_DIG, x);
        if (strtod(tmp, NULL) != x) snprintf(tmp, sizeof tmp, "%.*g", DBL_DIG + 2, x);
        appendf(buf, len, pos, "%s", tmp);
        break;
    }
    case VG_INT32: appendf(buf, len, pos, "%d", (int)((const int32_t *)d)[i]); break;
    case VG_INT64: appendf(buf, len, pos, "%lld", (long long)((const int64_t *)d)[i]); break;
    case VG_UINT8: appendf(buf, len, pos, "%u", (unsigned)((const uint8_t *)d)[i]); break;
    case VG_BOOL: appendf(buf, len, pos, "%d", ((const bool *)d)[i] ? 1 : 0); break;
    case VG_STRING: {
        size_t n = 0;
        const char *s = vg_tensor_string(t, i, &n);
        appendf(buf, len, pos, "%.*s", (int)n, s ? s : "");
        break;
    }
    default: appendf(buf, len, pos, " ?"); break;
    }
}

/* TF's PrintOneDim: nested brackets per dimension, at most limit elements. */
static void print_dim(char *buf, size_t len, size_t *pos, const vg_tensor *t, int dim, int64_t limit, int64_t *idx) {
    int nd = vg_tensor_ndims(t);
    int64_t count = vg_tensor_dim(t, dim);
    if (*idx >= limit) return;
    if (dim == nd - 1) {
        for (int64_t i = 0; i < count; i++) {
            if (*idx >= limit) {
                if (dim != 0) appendf(buf, len, pos, "...");
                return;
            }
            if (i > 0) appendf(buf, len, pos, " ");
            append_elem(buf, len, pos, t, (*idx)++);
        }
        return;
    }
    for (int64_t i = 0; i < count; i++) {
        bool open = false;
        if (*idx < limit) {
            appendf(buf, len, pos, "[");
            open = true;
        }
        print_dim(buf, len, pos, t, dim + 1, limit, idx);
        if (*idx < limit || open) appendf(buf, len, pos, "]");
    }
}

/* Tensor::SummarizeValue(max_entries). */
static void summarize(char *buf, size_t len, size_t *pos, const vg_tensor *t, int64_t max_entries) {
    int64_t n = vg_tensor_num_elements(t);
    if (max_entries < 0) max_entries = n;
    int64_t limit = max_entries < n ? max_entries : n, idx = 0;
    if (vg_tensor_ndims(t) == 0) {
        for (int64_t i = 0; i < limit; i++) {
            if (i > 0) appendf(buf, len, pos, " ");
            append_elem(buf, len, pos, t, i);
        }
    } else {
        print_dim(buf, len, pos, t, 0, limit, &idx);
    }
    if (n > limit) appendf(buf, len, pos, "...");
}

static vg_code kernel_assert(vg__kctx *ctx) {
    vg_tensor *cond = vg__kctx_input(ctx, 0);
    vg_status *st = vg__kctx_status(ctx);
    char sh[128];
    if (vg_tensor_num_elements(cond) != 1 || vg_tensor_ndims(cond) > 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "In[0] should be a scalar: %s",
                             vg__tshape_str(cond, sh, sizeof sh));
    if (*(const bool *)vg_tensor_data(cond)) return VG_OK;
    int64_t summ = 3;
    vg_op_attr_int(vg__kctx_op(ctx), "summarize", &summ);
    char msg[VG_STATUS_MSG_MAX];
    size_t pos = 0;
    appendf(msg, sizeof msg, &pos, "assertion failed: ");
    int n = vg__kctx_num_inputs(ctx);
    for (int i = 1; i < n; i++) {
        appendf(msg, sizeof msg, &pos, "[");
        summarize(msg, sizeof msg, &pos, vg__kctx_input(ctx, i), summ);
        appendf(msg, sizeof msg, &pos, "]");
        if (i < n - 1) appendf(msg, sizeof msg, &pos, " ");
    }
    return vg_status_set(st, VG_INVALID_ARGUMENT, "%s", msg);
}

vg_op *vg_assert(vg_graph *g, vg_output cond, const vg_output *data, int ndata, int summarize_n, const char *name) {
    vg_op_builder *b = vg_op_builder_new(g, "Assert", name);
    vg_dtype types[64];
    int nt = 0;
    vg_op_builder_add_input(b, cond);
    for (int i = 0; i < ndata; i++) {
        vg_op_builder_add_input(b, data[i]);
        if (nt < 64) types[nt++] = vg_output_dtype(data[i]);
    }
    vg_op_builder_set_attr_type_list(b, "T", types, nt);
    vg_op_builder_set_attr_int(b, "summarize", summarize_n);
    return vg_op_builder_finish(b);
}

/* ------------------------------------------------------------------------ */

const vg__op_def vg__ops_state[] = {
    {"VariableV2", 0, 0, VG__OP_VARIABLE | VG__OP_STATEFUL, 0, shape_variable, kernel_variable, grad_variable},
    {"Assign", 2, 2, VG__OP_PASS_REF | VG__OP_STATEFUL | VG__OP_NOT_DIFFERENTIABLE, 1u, shape_assign,
     kernel_assign, NULL},
    {"AssignAdd", 2, 2, VG__OP_PASS_REF | VG__OP_STATEFUL | VG__OP_NOT_DIFFERENTIABLE, 1u, shape_assign_update,
     kernel_assign_add, NULL},
    {"AssignSub", 2, 2, VG__OP_PASS_REF | VG__OP_STATEFUL | VG__OP_NOT_DIFFERENTIABLE, 1u, shape_assign_update,
     kernel_assign_sub, NULL},
    {"IsVariableInitialized", 1, 1, VG__OP_NOT_DIFFERENTIABLE, 1u, shape_is_initialized, kernel_is_initialized,
     NULL},
    {"Assert", 1, -1, VG__OP_STATEFUL | VG__OP_NOT_DIFFERENTIABLE, 0, shape_assert, kernel_assert, NULL},
    {"InitializedValueOr", 2, 2, VG__OP_STATEFUL | VG__OP_NOT_DIFFERENTIABLE, 1u, shape_initialized_value_or,
     kernel_initialized_value_or, NULL},
    {0},
};
