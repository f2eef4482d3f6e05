/*
 * resource_variable_ops.c - TF's resource variables (resource_variable_ops.cc):
 * VarHandleOp, ReadVariableOp, AssignVariableOp, AssignAddVariableOp,
 * AssignSubVariableOp, VarIsInitializedOp, DestroyResourceOp, VariableShape,
 * ResourceGather and ResourceScatter{Add,Sub,Mul,Div,Min,Max,Update}.
 *
 * The variable is a session resource (vg__session_resource, "var:<container>/<name>",
 * kept until the session is freed); VarHandleOp hands out a VG_RESOURCE scalar that
 * points to it (see kernels/state/resource_var.h). Unlike VariableV2 nothing here is a ref
 * input: every op finds the variable through its handle input when it runs, so a
 * ReadVariableOp reads the value at its own execution and keeps a reference to it (a
 * snapshot: writers copy a value that anyone else still holds before changing it, as
 * TF's PrepareToUpdateVariable does). A variable exists from its first
 * AssignVariableOp until a DestroyResourceOp (TF's LookupOrCreateResource /
 * DeleteResource); the error messages are TF 1.15's, with TF's default container name
 * "localhost" and resource type name N10tensorflow3VarE.
 *
 * Build time: the shape functions read the dtype and shape declared by the VarHandleOp
 * behind a handle (through Identity ops: TF's handle shape-and-type data) and check
 * them as TF's do; a handle from elsewhere is not checked.
 */
#include "kernels/state/resource_var.h"
#include "vigil/ops.h"
#include "vigil/ops_ext.h"
#include "vigil/resource_variables.h"
#include <stdio.h>

#define RVAR_MAGIC 0x7661725f72736376ULL /* tells a variable from another resource */

struct vg__rvar {
    uint64_t magic;
    pthread_mutex_t mu;
    vg_tensor *value; /* NULL: the variable does not exist */
    char *name, *container;
};

static const vg_output NONE = {NULL, 0};

/* ------------------------------------------------------------------------ */
/* the variable record */

vg__rvar *vg__rvar_of(const vg_tensor *t, vg_status *st) {
    vg__rvar *v = NULL;
    if (t && vg_tensor_dtype(t) == VG_RESOURCE && vg_tensor_num_elements(t) == 1)
        memcpy(&v, vg_tensor_data(t), sizeof v);
    if (!v || v->magic != RVAR_MAGIC) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "input 0 must be a resource variable handle (from a VarHandleOp)");
        return NULL;
    }
    return v;
}

void vg__rvar_lock(vg__rvar *v) { pthread_mutex_lock(&v->mu); }
void vg__rvar_unlock(vg__rvar *v) { pthread_mutex_unlock(&v->mu); }
vg_tensor *vg__rvar_value(vg__rvar *v) { return v->value; }
const char *vg__rvar_name(const vg__rvar *v) { return v->name; }
const char *vg__rvar_container(const vg__rvar *v) { return v->container; }

void vg__rvar_set(vg__rvar *v, vg_tensor *t) { vg__tensor_slot_set(&v->value, t); }

vg_code vg__rvar_not_found(const vg__rvar *v, vg_status *st) {
    return vg_status_set(st, VG_NOT_FOUND, "Resource %s/%s/N10tensorflow3VarE does not exist.", v->container,
                         v->name);
}

vg_tensor *vg__rvar_mutable(vg__rvar *v, vg_status *st) {
    if (!v->value) {
        vg__rvar_not_found(v, st);
        return NULL;
    }
    return vg__tensor_slot_unshare(&v->value, st);
}

static void rvar_destroy(void *p) {
    vg__rvar *v = p;
    if (!v) return;
    vg_tensor_free(v->value);
    vg__free(v->name);
    vg__free(v->container);
    pthread_mutex_destroy(&v->mu);
    vg__free(v);
}

static const vg__resource_ops rvar_ops = {NULL, rvar_destroy};

typedef struct rvar_key {
    const char *container, *name;
} rvar_key;

static void *rvar_create(void *arg, vg_status *st) {
    const rvar_key *k = arg;
    vg__rvar *v = vg__calloc_or_oom(sizeof *v, "resource variable", st);
    if (!v) return NULL;
    v->magic = RVAR_MAGIC;
    pthread_mutex_init(&v->mu, NULL);
    v->name = vg__strdup(k->name);
    v->container = vg__strdup(k->container);
    if (!v->name || !v->container) {
        rvar_destroy(v);
        VG_OOM(st, "resource variable");
        return NULL;
    }
    return v;
}

/* ------------------------------------------------------------------------ */
/* build-time helpers */

bool vg__rvar_handle_info(const vg_op *op, int i, vg_dtype *dt, vg_shape *shape) {
    *dt = VG_DTYPE_INVALID;
    *shape = vg_shape_unknown();
    if (i < 0 || i >= vg_op_num_inputs(op)) return false;
    vg_output in = vg_op_input(op, i);
    for (int depth = 0; in.op && depth < 256; depth++) {
        const char *t = vg_op_type(in.op);
        if (strcmp(t, "VarHandleOp") == 0) {
            if (!vg_op_attr_type_(in.op, "dtype", dt)) return false;
            if (!vg_op_attr_shape(in.op, "shape", shape)) *shape = vg_shape_unknown();
            return true;
        }
        /* handle data passes through Identity and the control-flow ops (TF's shape
         * functions forward it: a handle captured into a cond or loop) */
        bool pass = !strcmp(t, "Identity") || !strcmp(t, "Switch") || !strcmp(t, "Merge") || !strcmp(t, "Enter") ||
                    !strcmp(t, "Exit") || !strcmp(t, "NextIteration");
        if (!pass || vg_op_num_inputs(in.op) < 1) return false;
        in = vg_op_input(in.op, 0);
    }
    return false;
}

static vg_code check_handle_input(vg_op *op, vg_status *st) {
    vg_dtype d = vg__op_input_dtype(op, 0);
    if (d != VG_RESOURCE)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Input 'resource' of '%s' Op has type %s that does not match expected type of resource.",
                             vg_op_type(op), vg_dtype_name(d));
    return VG_OK;
}

/* ValidateVariableResourceHandle: the op's "dtype" attr (set from `value_input`'s
 * dtype when that is >= 0 and the attr is missing, else from the handle) against the
 * handle's declared dtype; *hshape gets the handle's declared shape. */
static vg_code validate_handle(vg_op *op, int value_input, vg_dtype *dt, vg_shape *hshape, vg_status *st) {
    if (check_handle_input(op, st)) return st->code;
    vg_dtype hd;
    bool known = vg__rvar_handle_info(op, 0, &hd, hshape);
    if (value_input >= 0) {
        vg_dtype vd = vg__op_input_dtype(op, value_input);
        vg__op_set_default_attr_type(op, "dtype", vd);
        vg_op_attr_type_(op, "dtype", dt);
        if (*dt != vd)
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "Input '%s' of '%s' Op has type %s that does not match type %s of argument 'dtype'.",
                                 value_input == 1 ? "value" : "updates", vg_op_type(op), vg_dtype_name(vd),
                                 vg_dtype_name(*dt));
    } else if (!vg_op_attr_type_(op, "dtype", dt)) {
        if (!known) return vg_status_set(st, VG_INVALID_ARGUMENT, "%s needs a 'dtype' attr", vg_op_type(op));
        vg__op_set_default_attr_type(op, "dtype", hd);
        *dt = hd;
    }
    if (known && hd != *dt)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Trying to read variable with wrong dtype. Expected %s got %s",
                             vg_dtype_name(hd), vg_dtype_name(*dt));
    return VG_OK;
}

static bool is_number(vg_dtype t) { return t == VG_FLOAT || t == VG_DOUBLE || t == VG_INT32 || t == VG_INT64; }

/* ------------------------------------------------------------------------ */
/* VarHandleOp */

static vg_code shape_var_handle(vg_op *op, vg_status *st) {
    vg_dtype dt;
    if (!vg_op_attr_type_(op, "dtype", &dt) || dt == VG_DTYPE_INVALID || dt == VG_RESOURCE)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "VarHandleOp needs a valid 'dtype' attr");
    vg__op_set_default_attr_string(op, "container", "");
    vg__op_set_default_attr_string(op, "shared_name", vg_op_name(op));
    return vg__op_set_single_output(op, VG_RESOURCE, vg_shape_make(NULL, 0));
}

static void attr_str(const vg_op *op, const char *attr, const char *dflt, char *buf, size_t len) {
    const char *s;
    size_t n = 0;
    if (vg_op_attr_string(op, attr, &s, &n) && n > 0) snprintf(buf, len, "%.*s", (int)n, s);
    else snprintf(buf, len, "%s", dflt);
}

static vg_code kernel_var_handle(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_op *op = vg__kctx_op(ctx);
    char container[512], name[1024], key[1600];
    attr_str(op, "container", "localhost", container, sizeof container);
    attr_str(op, "shared_name", vg_op_name(op), name, sizeof name);
    snprintf(key, sizeof key, "var:%s/%s", container, name);
    rvar_key k = {container, name};
    void *r = NULL;
    vg_code rc = vg__session_resource(vg__kctx_session(ctx), key, &rvar_ops, rvar_create, &k, &r, st);
    if (rc != VG_OK) return rc;
    return vg__kctx_output_handle(ctx, r);
}

/* ------------------------------------------------------------------------ */
/* ReadVariableOp */

static vg_code shape_read(vg_op *op, vg_status *st) {
    vg_dtype dt;
    vg_shape hs;
    if (validate_handle(op, -1, &dt, &hs, st)) return st->code;
    return vg__op_set_single_output(op, dt, hs);
}

static vg__rvar *var_input(vg__kctx *ctx) { return vg__rvar_of(vg__kctx_input(ctx, 0), vg__kctx_status(ctx)); }

static vg_dtype attr_dtype(const vg_op *op) {
    vg_dtype d = VG_DTYPE_INVALID;
    vg_op_attr_type_(op, "dtype", &d);
    return d;
}

static vg_code kernel_read(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg__rvar *v = var_input(ctx);
    if (!v) return st->code;
    vg_dtype want = attr_dtype(vg__kctx_op(ctx));
    vg__rvar_lock(v);
    vg_tensor *t = v->value;
    if (!t) {
        vg__rvar_unlock(v);
        return vg_status_set(st, VG_FAILED_PRECONDITION,
                             "Error while reading resource variable %s from Container: %s. This could mean that the "
                             "variable was uninitialized. Not found: Resource %s/%s/N10tensorflow3VarE does not "
                             "exist.",
                             v->name, v->container, v->container, v->name);
    }
    if (vg_tensor_dtype(t) != want) {
        vg__rvar_unlock(v);
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Trying to read variable with wrong dtype. Expected %s got %s",
                             vg_dtype_name(want), vg_dtype_name(vg_tensor_dtype(t)));
    }
    t = vg_tensor_ref(t);
    vg__rvar_unlock(v);
    vg__kctx_set_output(ctx, 0, t);
    return VG_OK;
}

/* _ReadGrad: the gradient of the value is the gradient of the variable. */
static vg_code grad_read(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    (void)g;
    (void)op;
    dx[0] = dy[0];
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* AssignVariableOp, AssignAddVariableOp, AssignSubVariableOp */

static vg_code shape_assign(vg_op *op, vg_status *st) {
    vg_dtype dt;
    vg_shape hs, out;
    if (validate_handle(op, 1, &dt, &hs, st)) return st->code;
    vg_shape vs = vg__op_input_shape(op, 1);
    if (vg__shape_merge(&hs, &vs, &out, st)) return st->code;
    return vg__op_set_no_outputs(op);
}

static vg_code shape_assign_update(vg_op *op, vg_status *st) {
    if (shape_assign(op, st)) return st->code;
    vg_dtype dt = attr_dtype(op);
    if (!is_number(dt))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s does not support dtype %s", vg_op_type(op),
                             vg_dtype_name(dt));
    return VG_OK;
}

static vg_code kernel_assign(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg__rvar *v = var_input(ctx);
    if (!v) return st->code;
    vg_tensor *value = vg__kctx_input(ctx, 1);
    vg_dtype dt = attr_dtype(vg__kctx_op(ctx));
    if (vg_tensor_dtype(value) != dt)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Variable and value dtypes don't match; respectively, %s and %s",
                             vg_dtype_name(dt), vg_dtype_name(vg_tensor_dtype(value)));
    vg__rvar_lock(v);
    if (v->value && vg_tensor_dtype(v->value) != dt) {
        vg_dtype have = vg_tensor_dtype(v->value);
        vg__rvar_unlock(v);
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Trying to assign variable with wrong dtype. Expected %s got %s",
                             vg_dtype_name(have), vg_dtype_name(dt));
    }
    /* no copy: the value is never written in place while anybody else holds it */
    vg__rvar_set(v, vg_tensor_ref(value));
    vg__rvar_unlock(v);
    return VG_OK;
}

static vg_code assign_update(vg__kctx *ctx, bool add) {
    vg_status *st = vg__kctx_status(ctx);
    vg__rvar *v = var_input(ctx);
    if (!v) return st->code;
    vg_tensor *val = vg__kctx_input(ctx, 1);
    char sa[160], sb[160];
    vg__rvar_lock(v);
    if (!v->value) {
        vg__rvar_unlock(v);
        return vg__rvar_not_found(v, st);
    }
    if (vg_tensor_dtype(v->value) != vg_tensor_dtype(val)) {
        vg_dtype have = vg_tensor_dtype(v->value);
        vg__rvar_unlock(v);
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Trying to update variable with wrong dtype. Expected %s got %s",
                             vg_dtype_name(have), vg_dtype_name(vg_tensor_dtype(val)));
    }
    if (!vg__same_dims(v->value, val)) {
        vg__rvar_unlock(v);
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Cannot update variable with shape %s using a Tensor with shape %s, shapes must be "
                             "equal.",
                             vg__tshape_str(v->value, sa, sizeof sa), vg__tshape_str(val, sb, sizeof sb));
    }
    vg_tensor *cur = vg__rvar_mutable(v, st);
    if (!cur) {
        vg__rvar_unlock(v);
        return st->code;
    }
    if (!vg__tensor_add_sub_inplace(cur, val, add)) {
        vg__rvar_unlock(v);
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s does not support dtype %s",
                             vg_op_type(vg__kctx_op(ctx)), vg_dtype_name(vg_tensor_dtype(cur)));
    }
    vg__rvar_unlock(v);
    return VG_OK;
}

static vg_code kernel_assign_add(vg__kctx *ctx) { return assign_update(ctx, true); }
static vg_code kernel_assign_sub(vg__kctx *ctx) { return assign_update(ctx, false); }

/* ------------------------------------------------------------------------ */
/* VarIsInitializedOp, DestroyResourceOp, VariableShape */

static vg_code shape_is_initialized(vg_op *op, vg_status *st) {
    if (check_handle_input(op, st)) return st->code;
    return vg__op_set_single_output(op, VG_BOOL, vg_shape_make(NULL, 0));
}

static vg_code kernel_is_initialized(vg__kctx *ctx) {
    vg__rvar *v = var_input(ctx);
    if (!v) return vg__kctx_status(ctx)->code;
    vg_tensor *out;
    if (vg__kctx_alloc_output(ctx, 0, VG_BOOL, NULL, 0, &out)) return vg__kctx_status(ctx)->code;
    vg__rvar_lock(v);
    *(bool *)vg_tensor_data(out) = v->value != NULL;
    vg__rvar_unlock(v);
    return VG_OK;
}

static vg_code shape_destroy(vg_op *op, vg_status *st) {
    if (check_handle_input(op, st)) return st->code;
    vg__op_set_default_attr_bool(op, "ignore_lookup_error", true);
    return vg__op_set_no_outputs(op);
}

static vg_code kernel_destroy(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg__rvar *v = var_input(ctx);
    if (!v) return st->code;
    bool ignore = true;
    vg_op_attr_bool(vg__kctx_op(ctx), "ignore_lookup_error", &ignore);
    vg__rvar_lock(v);
    bool existed = v->value != NULL;
    vg__rvar_set(v, NULL);
    vg__rvar_unlock(v);
    if (!existed && !ignore) return vg__rvar_not_found(v, st);
    return VG_OK;
}

/* DisableCopyOnRead (TF 2.x resource_variable_ops.cc): turns off a variable's
 * copy-on-read mode, which only affects how TF shares a variable's buffer with
 * sparse readers. vigil's reads never alias a variable that a later write changes
 * (a write replaces the value), so the op only checks its handle. */
static vg_code shape_disable_copy_on_read(vg_op *op, vg_status *st) {
    if (check_handle_input(op, st)) return st->code;
    return vg__op_set_no_outputs(op);
}

static vg_code kernel_disable_copy_on_read(vg__kctx *ctx) {
    return var_input(ctx) ? VG_OK : vg__kctx_status(ctx)->code;
}

static vg_code shape_variable_shape(vg_op *op, vg_status *st) {
    if (check_handle_input(op, st)) return st->code;
    vg__op_set_default_attr_type(op, "out_type", VG_INT32);
    vg_dtype ot = VG_INT32, hd;
    vg_op_attr_type_(op, "out_type", &ot);
    if (ot != VG_INT32 && ot != VG_INT64)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "VariableShape: out_type must be int32 or int64, not %s",
                             vg_dtype_name(ot));
    vg_shape hs;
    if (!vg__rvar_handle_info(op, 0, &hd, &hs))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Handle doesn't have shape information.");
    int64_t r = hs.ndims;
    return vg__op_set_single_output(op, ot, hs.ndims >= 0 ? vg_shape_make(&r, 1) : vg_shape_make((int64_t[]){-1}, 1));
}

static vg_code kernel_variable_shape(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg__rvar *v = var_input(ctx);
    if (!v) return st->code;
    vg_dtype ot = VG_INT32;
    vg_op_attr_type_(vg__kctx_op(ctx), "out_type", &ot);
    vg__rvar_lock(v);
    if (!v->value) {
        vg__rvar_unlock(v);
        return vg__rvar_not_found(v, st);
    }
    vg_shape s = vg_tensor_shape(v->value);
    vg__rvar_unlock(v);
    int64_t r = s.ndims;
    vg_tensor *out;
    if (vg__kctx_alloc_output(ctx, 0, ot, &r, 1, &out)) return st->code;
    for (int i = 0; i < s.ndims; i++) {
        if (ot == VG_INT32) ((int32_t *)vg_tensor_data(out))[i] = (int32_t)s.dims[i];
        else ((int64_t *)vg_tensor_data(out))[i] = s.dims[i];
    }
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* ResourceGather */

static vg_code index_dtype(vg_op *op, int i, vg_status *st) {
    vg_dtype d = vg__op_input_dtype(op, i);
    if (d != VG_INT32 && d != VG_INT64)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Value for attr 'Tindices' of %s is not in the list of allowed values: int32, int64",
                             vg_dtype_name(d));
    vg__op_set_default_attr_type(op, "Tindices", d);
    return VG_OK;
}

/* shape[1:] appended to out (which has out->ndims dims already). */
static vg_code concat_tail(vg_shape *out, const vg_shape *shape, vg_status *st) {
    if (out->ndims < 0 || shape->ndims < 0) {
        *out = vg_shape_unknown();
        return VG_OK;
    }
    if (out->ndims + shape->ndims - 1 > VG_MAX_DIMS)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "result rank %d exceeds %d", out->ndims + shape->ndims - 1,
                             VG_MAX_DIMS);
    for (int i = 1; i < shape->ndims; i++) out->dims[out->ndims++] = shape->dims[i];
    return VG_OK;
}

static vg_code shape_gather(vg_op *op, vg_status *st) {
    vg_dtype dt;
    vg_shape hs;
    if (validate_handle(op, -1, &dt, &hs, st)) return st->code;
    if (index_dtype(op, 1, st)) return st->code;
    vg__op_set_default_attr_int(op, "batch_dims", 0);
    vg__op_set_default_attr_bool(op, "validate_indices", true);
    int64_t bd = 0;
    vg_op_attr_int(op, "batch_dims", &bd);
    if (bd != 0) return vg_status_set(st, VG_UNIMPLEMENTED, "ResourceGather: batch_dims %lld (only 0)", (long long)bd);
    if (hs.ndims == 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Shape must be at least rank 1 but is rank 0");
    vg_shape out = vg__op_input_shape(op, 1);
    if (concat_tail(&out, &hs, st)) return st->code;
    return vg__op_set_single_output(op, dt, out);
}

static int64_t index_at(const vg_tensor *ix, int64_t i) {
    return vg_tensor_dtype(ix) == VG_INT32 ? ((const int32_t *)vg_tensor_data(ix))[i]
                                           : ((const int64_t *)vg_tensor_data(ix))[i];
}

/* TF's SliceDebugString: "[i]" / "[i,j]" for flat index i of shape. */
static void slice_str(const vg_tensor *ix, int64_t flat, char *buf, size_t len) {
    int nd = vg_tensor_ndims(ix);
    int64_t pos[VG_MAX_DIMS];
    for (int d = nd - 1; d >= 0; d--) {
        int64_t n = vg_tensor_dim(ix, d);
        pos[d] = n > 0 ? flat % n : 0;
        flat = n > 0 ? flat / n : 0;
    }
    size_t o = 0;
    o += (size_t)snprintf(buf + o, len - o, "[");
    for (int d = 0; d < nd && o < len; d++)
        o += (size_t)snprintf(buf + o, len - o, "%s%lld", d ? "," : "", (long long)pos[d]);
    if (o < len) snprintf(buf + o, len - o, "]");
}

/* Index i outside [0, limit): sets TF's message. */
static vg_code bad_index(vg_status *st, const vg_tensor *ix, int64_t i, int64_t limit) {
    char s[200];
    slice_str(ix, i, s, sizeof s);
    return vg_status_set(st, VG_INVALID_ARGUMENT, "indices%s = %lld is not in [0, %lld)", s,
                         (long long)index_at(ix, i), (long long)limit);
}

/* Copies row src of p into row dst of out (rows of `row` elements). */
static vg_code copy_row(vg_tensor *out, int64_t dst, const vg_tensor *p, int64_t src, int64_t row, vg_status *st) {
    if (vg_tensor_dtype(p) == VG_STRING) {
        for (int64_t k = 0; k < row; k++) {
            size_t n = 0;
            const char *s = vg_tensor_string(p, src * row + k, &n);
            if (vg_tensor_set_string(out, dst * row + k, s ? s : "", n, st)) return st->code;
        }
        return VG_OK;
    }
    size_t es = vg_dtype_size(vg_tensor_dtype(p));
    memcpy((char *)vg_tensor_data(out) + (size_t)(dst * row) * es,
           (const char *)vg_tensor_data(p) + (size_t)(src * row) * es, (size_t)row * es);
    return VG_OK;
}

static vg_code kernel_gather(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg__rvar *v = var_input(ctx);
    if (!v) return st->code;
    vg_tensor *ix = vg__kctx_input(ctx, 1);
    vg_dtype want = attr_dtype(vg__kctx_op(ctx));
    /* the lock is held for the whole read (TF: no reference, so no copy by a writer) */
    vg__rvar_lock(v);
    vg_tensor *p = v->value;
    vg_code rc = VG_OK;
    if (!p) {
        rc = vg__rvar_not_found(v, st);
        goto done;
    }
    if (vg_tensor_dtype(p) != want) {
        rc = vg_status_set(st, VG_INVALID_ARGUMENT, "Trying to read variable with wrong dtype. Expected %s got %s",
                           vg_dtype_name(want), vg_dtype_name(vg_tensor_dtype(p)));
        goto done;
    }
    if (vg_tensor_ndims(p) < 1) {
        rc = vg_status_set(st, VG_INVALID_ARGUMENT, "params must be at least 1 dimensional");
        goto done;
    }
    int nd = vg_tensor_ndims(ix) + vg_tensor_ndims(p) - 1;
    if (nd > VG_MAX_DIMS) {
        rc = vg_status_set(st, VG_INVALID_ARGUMENT, "ResourceGather: result rank %d exceeds %d", nd, VG_MAX_DIMS);
        goto done;
    }
    int64_t dims[VG_MAX_DIMS];
    int k = 0;
    for (int i = 0; i < vg_tensor_ndims(ix); i++) dims[k++] = vg_tensor_dim(ix, i);
    for (int i = 1; i < vg_tensor_ndims(p); i++) dims[k++] = vg_tensor_dim(p, i);
    int64_t n = vg_tensor_num_elements(ix), rows = vg_tensor_dim(p, 0);
    int64_t row = rows > 0 ? vg_tensor_num_elements(p) / rows : 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t r = index_at(ix, i);
        if (r < 0 || r >= rows) {
            rc = bad_index(st, ix, i, rows);
            goto done;
        }
    }
    vg_tensor *out;
    if ((rc = vg__kctx_alloc_output(ctx, 0, vg_tensor_dtype(p), dims, nd, &out)) != VG_OK) goto done;
    for (int64_t i = 0; i < n && row > 0 && rc == VG_OK; i++) rc = copy_row(out, i, p, index_at(ix, i), row, st);
done:
    vg__rvar_unlock(v);
    return rc;
}

/* _GatherGrad (resource_variable_ops.py): IndexedSlices(reshape(grad, [size] +
 * params_shape[1:]), reshape(indices, [size]), params_shape), in vigil's sparse form
 * UnsortedSegmentSum(values, indices, params_shape[0]). Shapes known at build time
 * become Consts. */
static vg_code grad_gather(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output handle = vg_op_input(op, 0), indices = vg_op_input(op, 1);
    dx[1] = NONE;
    vg_dtype hd;
    vg_shape ps, is = vg_output_shape(indices);
    bool known = vg__rvar_handle_info(op, 0, &hd, &ps) && vg_shape_is_fully_defined(&ps) && ps.ndims >= 1;
    int64_t nind = vg_shape_num_elements(&is);
    vg_output size = nind >= 0 ? vg_const_i32_vec(g, (int32_t[]){(int32_t)nind}, 1, "ExpandDims")
                               : vg_expand_dims(g, vg_size(g, indices, NULL), 0, NULL);
    vg_output rest, num;
    if (known) {
        int32_t tail[VG_MAX_DIMS];
        for (int i = 1; i < ps.ndims; i++) tail[i - 1] = (int32_t)ps.dims[i];
        rest = vg_const_i32_vec(g, tail, ps.ndims - 1, "strided_slice");
        num = vg_const_i32(g, (int32_t)ps.dims[0], "strided_slice_1");
    } else {
        vg_output pshape = vg_variable_shape(g, handle, VG_INT32, NULL);
        int32_t b1 = 1, e0 = 0, b0 = 0, e1 = 1;
        vg_strided_slice_masks tail_m = {0, 1, 0, 0, 0}, first_m = {0, 0, 0, 0, 1};
        rest = vg_strided_slice_c(g, pshape, &b1, &e0, NULL, 1, &tail_m, "strided_slice");
        num = vg_strided_slice_c(g, pshape, &b0, &e1, NULL, 1, &first_m, "strided_slice_1");
    }
    vg_output parts[2] = {size, rest};
    vg_output values = vg_reshape(g, dy[0], vg_concat_c(g, parts, 2, 0, "concat"), NULL);
    vg_output flat = vg_reshape(g, indices, size, NULL);
    vg_op_builder *b = vg__builder_with_inputs(g, "UnsortedSegmentSum", "UnsortedSegmentSum", NULL,
                                               (vg_output[]){values, flat, num}, 3);
    dx[0] = vg_out(vg_op_builder_finish(b), 0);
    return vg_graph_status(g, NULL);
}

/* ------------------------------------------------------------------------ */
/* ResourceScatter* */

typedef enum scatter_kind { SC_ADD, SC_SUB, SC_MUL, SC_DIV, SC_MIN, SC_MAX, SC_UPDATE } scatter_kind;

static scatter_kind kind_of(const char *type) {
    static const char *const names[] = {"ResourceScatterAdd", "ResourceScatterSub", "ResourceScatterMul",
                                        "ResourceScatterDiv", "ResourceScatterMin", "ResourceScatterMax"};
    for (int i = 0; i < 6; i++)
        if (strcmp(type, names[i]) == 0) return (scatter_kind)i;
    return SC_UPDATE;
}

/* ResourceScatterUpdateShape: updates is a scalar or merges with indices.shape +
 * var.shape[1:]. */
static vg_code shape_scatter(vg_op *op, vg_status *st) {
    vg_dtype dt;
    vg_shape hs;
    if (validate_handle(op, 2, &dt, &hs, st)) return st->code;
    if (index_dtype(op, 1, st)) return st->code;
    if (kind_of(vg_op_type(op)) != SC_UPDATE && !is_number(dt))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s does not support dtype %s", vg_op_type(op),
                             vg_dtype_name(dt));
    if (hs.ndims == 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Shape must be at least rank 1 but is rank 0");
    vg_shape want = vg__op_input_shape(op, 1), us = vg__op_input_shape(op, 2), merged;
    if (concat_tail(&want, &hs, st)) return st->code;
    if (us.ndims != 0 && vg__shape_merge(&us, &want, &merged, st)) return st->code;
    return vg__op_set_no_outputs(op);
}

#define SCATTER_LOOP(T)                                                                            \
    do {                                                                                           \
        T *p_ = (T *)vg_tensor_data(params);                                                       \
        const T *u_ = (const T *)vg_tensor_data(upd);                                              \
        for (int64_t i = 0; i < n; i++) {                                                          \
            T *dst = p_ + index_at(ix, i) * row;                                                   \
            const T *src = scalar ? u_ : u_ + i * row;                                             \
            int64_t step = scalar ? 0 : 1;                                                         \
            switch (kind) {                                                                        \
            case SC_ADD: for (int64_t k = 0; k < row; k++) dst[k] += src[k * step]; break;         \
            case SC_SUB: for (int64_t k = 0; k < row; k++) dst[k] -= src[k * step]; break;         \
            case SC_MUL: for (int64_t k = 0; k < row; k++) dst[k] *= src[k * step]; break;         \
            case SC_DIV: for (int64_t k = 0; k < row; k++) dst[k] /= src[k * step]; break;         \
            case SC_MIN:                                                                           \
                for (int64_t k = 0; k < row; k++) dst[k] = src[k * step] < dst[k] ? src[k * step] : dst[k]; \
                break;                                                                             \
            case SC_MAX:                                                                           \
                for (int64_t k = 0; k < row; k++) dst[k] = src[k * step] > dst[k] ? src[k * step] : dst[k]; \
                break;                                                                             \
            case SC_UPDATE: for (int64_t k = 0; k < row; k++) dst[k] = src[k * step]; break;       \
            }                                                                                      \
        }                                                                                          \
    } while (0)

/* Integer division by zero is undefined in C: rejected before anything is written. */
static bool has_int_zero(const vg_tensor *u) {
    int64_t n = vg_tensor_num_elements(u);
    for (int64_t i = 0; i < n; i++) {
        if (vg_tensor_dtype(u) == VG_INT32 && ((const int32_t *)vg_tensor_data(u))[i] == 0) return true;
        if (vg_tensor_dtype(u) == VG_INT64 && ((const int64_t *)vg_tensor_data(u))[i] == 0) return true;
    }
    return false;
}

static vg_code kernel_scatter(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg__rvar *v = var_input(ctx);
    if (!v) return st->code;
    scatter_kind kind = kind_of(vg_op_type(vg__kctx_op(ctx)));
    vg_tensor *ix = vg__kctx_input(ctx, 1), *upd = vg__kctx_input(ctx, 2);
    char a[160], b[160], c[160];
    vg_code rc = VG_OK;
    vg__rvar_lock(v);
    vg_tensor *params = v->value;
    if (!params) {
        rc = vg__rvar_not_found(v, st);
        goto done;
    }
    vg_dtype dt = vg_tensor_dtype(params);
    if (vg_tensor_dtype(upd) != dt) {
        rc = vg_status_set(st, VG_INVALID_ARGUMENT, "Trying to update variable with wrong dtype. Expected %s got %s",
                           vg_dtype_name(dt), vg_dtype_name(vg_tensor_dtype(upd)));
        goto done;
    }
    if (vg_tensor_ndims(params) < 1) {
        rc = vg_status_set(st, VG_INVALID_ARGUMENT, "params must be at least 1 dimensional");
        goto done;
    }
    bool scalar = vg_tensor_ndims(upd) == 0;
    if (!scalar && vg_tensor_ndims(upd) != vg_tensor_ndims(ix) + vg_tensor_ndims(params) - 1) {
        rc = vg_status_set(st, VG_INVALID_ARGUMENT,
                           "Must have updates.shape = indices.shape + params.shape[1:] or updates.shape = [], got "
                           "updates.shape %s, indices.shape %s, params.shape %s",
                           vg__tshape_str(upd, a, sizeof a), vg__tshape_str(ix, b, sizeof b),
                           vg__tshape_str(params, c, sizeof c));
        goto done;
    }
    int64_t n = vg_tensor_num_elements(ix), rows = vg_tensor_dim(params, 0);
    int64_t row = rows > 0 ? vg_tensor_num_elements(params) / rows : 0;
    if (n == 0) goto done;
    if (!scalar && vg_tensor_num_elements(upd) != n * row) {
        rc = vg_status_set(st, VG_INVALID_ARGUMENT,
                           "shape of indices (%s) is not compatible with the shape of updates (%s)",
                           vg__tshape_str(ix, a, sizeof a), vg__tshape_str(upd, b, sizeof b));
        goto done;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t r = index_at(ix, i);
        if (r < 0 || r >= rows) {
            rc = bad_index(st, ix, i, rows);
            goto done;
        }
    }
    if (kind == SC_DIV && (dt == VG_INT32 || dt == VG_INT64) && has_int_zero(upd)) {
        rc = vg_status_set(st, VG_INVALID_ARGUMENT, "Integer division by zero");
        goto done;
    }
    params = vg__rvar_mutable(v, st);
    if (!params) {
        rc = st->code;
        goto done;
    }
    if (row == 0) goto done;
    switch (dt) {
    case VG_FLOAT: SCATTER_LOOP(float); break;
    case VG_DOUBLE: SCATTER_LOOP(double); break;
    case VG_INT32: SCATTER_LOOP(int32_t); break;
    case VG_INT64: SCATTER_LOOP(int64_t); break;
    default:
        if (kind != SC_UPDATE) {
            rc = vg_status_set(st, VG_INVALID_ARGUMENT, "%s does not support dtype %s", vg_op_type(vg__kctx_op(ctx)),
                               vg_dtype_name(dt));
            break;
        }
        for (int64_t i = 0; i < n && rc == VG_OK; i++) {
            int64_t r = index_at(ix, i);
            if (dt == VG_STRING) {
                for (int64_t k = 0; k < row && rc == VG_OK; k++) {
                    size_t len = 0;
                    const char *s = vg_tensor_string(upd, scalar ? 0 : i * row + k, &len);
                    rc = vg_tensor_set_string(params, r * row + k, s ? s : "", len, st);
                }
            } else {
                size_t es = vg_dtype_size(dt);
                char *dst = (char *)vg_tensor_data(params) + (size_t)(r * row) * es;
                const char *src = vg_tensor_data(upd);
                for (int64_t k = 0; k < row; k++)
                    memcpy(dst + (size_t)k * es, src + (size_t)(scalar ? 0 : i * row + k) * es, es);
            }
        }
        break;
    }
done:
    vg__rvar_unlock(v);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* builders */

vg_output vg_var_handle_op(vg_graph *g, vg_dtype dt, const int64_t *dims, int ndims, const char *container,
                           const char *shared_name, const char *name) {
    vg_op_builder *b = vg_op_builder_new(g, "VarHandleOp", name);
    vg_op_builder_set_attr_type(b, "dtype", dt);
    vg_op_builder_set_attr_shape(b, "shape", ndims < 0 ? vg_shape_unknown() : vg_shape_make(dims, ndims));
    vg_op_builder_set_attr_string(b, "container", container ? container : "", container ? strlen(container) : 0);
    if (shared_name) vg_op_builder_set_attr_string(b, "shared_name", shared_name, strlen(shared_name));
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_output vg_read_variable_op(vg_graph *g, vg_output handle, vg_dtype dt, const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, "ReadVariableOp", name, NULL, (vg_output[]){handle}, 1);
    vg_op_builder_set_attr_type(b, "dtype", dt);
    return vg_out(vg_op_builder_finish(b), 0);
}

static vg_op *build_assign(vg_graph *g, const char *type, vg_output handle, vg_output value, const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, type, name, NULL, (vg_output[]){handle, value}, 2);
    if (value.op) vg_op_builder_set_attr_type(b, "dtype", vg_output_dtype(value));
    return vg_op_builder_finish(b);
}

vg_op *vg_assign_variable_op(vg_graph *g, vg_output handle, vg_output value, const char *name) {
    return build_assign(g, "AssignVariableOp", handle, value, name);
}
vg_op *vg_assign_add_variable_op(vg_graph *g, vg_output handle, vg_output value, const char *name) {
    return build_assign(g, "AssignAddVariableOp", handle, value, name);
}
vg_op *vg_assign_sub_variable_op(vg_graph *g, vg_output handle, vg_output value, const char *name) {
    return build_assign(g, "AssignSubVariableOp", handle, value, name);
}

vg_output vg_var_is_initialized_op(vg_graph *g, vg_output handle, const char *name) {
    return vg__build_simple(g, "VarIsInitializedOp", name, NULL, (vg_output[]){handle}, 1);
}

vg_op *vg_destroy_resource_op(vg_graph *g, vg_output handle, bool ignore_lookup_error, const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, "DestroyResourceOp", name, NULL, (vg_output[]){handle}, 1);
    vg_op_builder_set_attr_bool(b, "ignore_lookup_error", ignore_lookup_error);
    return vg_op_builder_finish(b);
}

vg_output vg_variable_shape(vg_graph *g, vg_output handle, vg_dtype out_type, const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, "VariableShape", name, NULL, (vg_output[]){handle}, 1);
    vg_op_builder_set_attr_type(b, "out_type", out_type);
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_output vg_resource_gather(vg_graph *g, vg_output handle, vg_output indices, vg_dtype dt, const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, "ResourceGather", name, NULL, (vg_output[]){handle, indices}, 2);
    vg_op_builder_set_attr_type(b, "dtype", dt);
    if (indices.op) vg_op_builder_set_attr_type(b, "Tindices", vg_output_dtype(indices));
    vg_op_builder_set_attr_int(b, "batch_dims", 0);
    vg_op_builder_set_attr_bool(b, "validate_indices", true);
    return vg_out(vg_op_builder_finish(b), 0);
}

static vg_op *build_scatter(vg_graph *g, const char *type, vg_output handle, vg_output indices, vg_output updates,
                            const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, type, name, NULL, (vg_output[]){handle, indices, updates}, 3);
    if (updates.op) vg_op_builder_set_attr_type(b, "dtype", vg_output_dtype(updates));
    if (indices.op) vg_op_builder_set_attr_type(b, "Tindices", vg_output_dtype(indices));
    return vg_op_builder_finish(b);
}

vg_op *vg_resource_scatter_add(vg_graph *g, vg_output h, vg_output i, vg_output u, const char *name) {
    return build_scatter(g, "ResourceScatterAdd", h, i, u, name);
}
vg_op *vg_resource_scatter_sub(vg_graph *g, vg_output h, vg_output i, vg_output u, const char *name) {
    return build_scatter(g, "ResourceScatterSub", h, i, u, name);
}
vg_op *vg_resource_scatter_mul(vg_graph *g, vg_output h, vg_output i, vg_output u, const char *name) {
    return build_scatter(g, "ResourceScatterMul", h, i, u, name);
}
vg_op *vg_resource_scatter_div(vg_graph *g, vg_output h, vg_output i, vg_output u, const char *name) {
    return build_scatter(g, "ResourceScatterDiv", h, i, u, name);
}
vg_op *vg_resource_scatter_min(vg_graph *g, vg_output h, vg_output i, vg_output u, const char *name) {
    return build_scatter(g, "ResourceScatterMin", h, i, u, name);
}
vg_op *vg_resource_scatter_max(vg_graph *g, vg_output h, vg_output i, vg_output u, const char *name) {
    return build_scatter(g, "ResourceScatterMax", h, i, u, name);
}
vg_op *vg_resource_scatter_update(vg_graph *g, vg_output h, vg_output i, vg_output u, const char *name) {
    return build_scatter(g, "ResourceScatterUpdate", h, i, u, name);
}

/* ------------------------------------------------------------------------ */

#define RV_FLAGS (VG__OP_STATEFUL | VG__OP_NOT_DIFFERENTIABLE)

const vg__op_def vg__ops_resource_variable[] = {
    {"VarHandleOp", 0, 0, RV_FLAGS, 0, shape_var_handle, kernel_var_handle, NULL},
    {"ReadVariableOp", 1, 1, VG__OP_STATEFUL, 0, shape_read, kernel_read, grad_read},
    {"AssignVariableOp", 2, 2, RV_FLAGS, 0, shape_assign, kernel_assign, NULL},
    {"AssignAddVariableOp", 2, 2, RV_FLAGS, 0, shape_assign_update, kernel_assign_add, NULL},
    {"AssignSubVariableOp", 2, 2, RV_FLAGS, 0, shape_assign_update, kernel_assign_sub, NULL},
    {"VarIsInitializedOp", 1, 1, RV_FLAGS, 0, shape_is_initialized, kernel_is_initialized, NULL},
    {"DestroyResourceOp", 1, 1, RV_FLAGS, 0, shape_destroy, kernel_destroy, NULL},
    {"DisableCopyOnRead", 1, 1, RV_FLAGS, 0, shape_disable_copy_on_read, kernel_disable_copy_on_read, NULL},
    {"VariableShape", 1, 1, RV_FLAGS, 0, shape_variable_shape, kernel_variable_shape, NULL},
    {"ResourceGather", 2, 2, VG__OP_STATEFUL, 0, shape_gather, kernel_gather, grad_gather},
    {"ResourceScatterAdd", 3, 3, RV_FLAGS, 0, shape_scatter, kernel_scatter, NULL},
    {"ResourceScatterSub", 3, 3, RV_FLAGS, 0, shape_scatter, kernel_scatter, NULL},
    {"ResourceScatterMul", 3, 3, RV_FLAGS, 0, shape_scatter, kernel_scatter, NULL},
    {"ResourceScatterDiv", 3, 3, RV_FLAGS, 0, shape_scatter, kernel_scatter, NULL},
    {"ResourceScatterMin", 3, 3, RV_FLAGS, 0, shape_scatter, kernel_scatter, NULL},
    {"ResourceScatterMax", 3, 3, RV_FLAGS, 0, shape_scatter, kernel_scatter, NULL},
    {"ResourceScatterUpdate", 3, 3, RV_FLAGS, 0, shape_scatter, kernel_scatter, NULL},
    {0},
};
