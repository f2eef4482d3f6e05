/*
 * array_shape_ops.c - TensorFlow's array ops that feed, name and shape values:
 * feeding and constants (Placeholder, PlaceholderWithDefault, Const),
 * Identity/StopGradient/NoOp, shape ops (Reshape, Shape, Size, Rank, ExpandDims,
 * Squeeze, BroadcastGradientArgs, InvertPermutation), generators (Fill, ZerosLike,
 * OnesLike, Range, Where), their gradients and builders, the helpers of
 * array_internal.h, and the family's op table vg__ops_array_shape.
 *
 * array_index_ops.c holds the indexing and layout ops (Transpose, ConcatV2, Slice,
 * Pad, Pack/Unpack, GatherV2, UnsortedSegmentSum, OneHot, Tile, ConcatOffset).
 *
 * Reshape, ExpandDims and Squeeze return aliases of their input's buffer
 * (vg__tensor_alias); Identity and Const hand out new references.
 */
#include "kernels/array/array_internal.h"
#include <math.h>
#include <stdio.h>

static char *shape_str(const vg_shape *s, char *buf) { return vg_shape_str(s, buf, 128); }

/* ------------------------------------------------------------------------ */
/* shared helpers */

/* Sets type attr `attr` from input i's dtype if absent, and checks they agree. */
vg_code vg__array_type_attr(vg_op *op, const char *attr, int i, vg_status *st) {
    vg_dtype in = vg__op_input_dtype(op, i), t = VG_DTYPE_INVALID;
    vg__op_set_default_attr_type(op, attr, in);
    if (vg_op_attr_type_(op, attr, &t) && t != in)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "input %d is of type %s but attr %s is %s", i,
                             vg_dtype_name(in), attr, vg_dtype_name(t));
    return VG_OK;
}

/* As vg__array_type_attr for an index input that must be int32 or int64. */
vg_code vg__array_index_attr(vg_op *op, const char *attr, int i, const char *what, vg_status *st) {
    vg_dtype in = vg__op_input_dtype(op, i);
    if (in != VG_INT32 && in != VG_INT64)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s must be int32 or int64, got %s", what, vg_dtype_name(in));
    return vg__array_type_attr(op, attr, i, st);
}

/* Partial value of output o read as a 1-D shape vector (TF's MakeShapeFromShapeTensor):
 * Const values; the build-time shape behind a Shape op; Pack of scalars and ConcatV2
 * of vectors element-wise. Unknown entries (and negative Const entries, Reshape's -1)
 * are -1; unknown length gives ndims -1. */
static vg_shape shape_value_of(vg_output o, int depth) {
    vg_shape unk = vg_shape_unknown();
    if (!o.op || depth > 6) return unk;
    vg_op *p = o.op;
    const char *type = vg_op_type(p);
    const vg_tensor *c;
    if ((vg__op_def_of(p)->flags & VG__OP_CONST) && vg_op_attr_tensor(p, "value", &c)) {
        vg_dtype dt = vg_tensor_dtype(c);
        if (vg_tensor_ndims(c) != 1 || (dt != VG_INT32 && dt != VG_INT64) || vg_tensor_dim(c, 0) > VG_MAX_DIMS)
            return unk;
        vg_shape s = vg_shape_make(NULL, (int)vg_tensor_dim(c, 0));
        for (int k = 0; k < s.ndims; k++) s.dims[k] = vg__int_at(c, k) < 0 ? -1 : vg__int_at(c, k);
        return s;
    }
    if (strcmp(type, "Shape") == 0) return vg__op_input_shape(p, 0);
    if (strcmp(type, "Identity") == 0) return shape_value_of(vg_op_input(p, 0), depth + 1);
    int64_t axis = 0;
    if (strcmp(type, "Pack") == 0 && vg_op_attr_int(p, "axis", &axis) && axis == 0 &&
        vg_op_num_inputs(p) <= VG_MAX_DIMS) {
        vg_shape s = vg_shape_make(NULL, vg_op_num_inputs(p));
        for (int k = 0; k < s.ndims; k++) {
            const vg_tensor *e = vg__op_const_input(p, k);
            vg_dtype dt = e ? vg_tensor_dtype(e) : VG_DTYPE_INVALID;
            if (e && vg_tensor_ndims(e) == 0 && (dt == VG_INT32 || dt == VG_INT64) && vg__int_at(e, 0) >= 0)
                s.dims[k] = vg__int_at(e, 0);
        }
        return s;
    }
    if (strcmp(type, "ConcatV2") == 0) {
        int n = vg_op_num_inputs(p) - 1;
        const vg_tensor *ax = vg__op_const_input(p, n);
        if (ax && vg_tensor_num_elements(ax) == 1 && (vg__int_at(ax, 0) == 0 || vg__int_at(ax, 0) == -1)) {
            vg_shape s = vg_shape_make(NULL, 0);
            for (int k = 0; k < n; k++) {
                vg_shape part = shape_value_of(vg_op_input(p, k), depth + 1);
                if (part.ndims < 0 || s.ndims + part.ndims > VG_MAX_DIMS) { s.ndims = -1; break; }
                for (int d = 0; d < part.ndims; d++) s.dims[s.ndims++] = part.dims[d];
            }
            if (s.ndims >= 0) return s;
        }
    }
    vg_shape os = vg_output_shape(o);
    if (os.ndims == 1 && os.dims[0] >= 0 && os.dims[0] <= VG_MAX_DIMS) return vg_shape_make(NULL, (int)os.dims[0]);
    return unk;
}

vg_shape vg__array_shape_value(const vg_op *op, int i) { return shape_value_of(vg_op_input(op, i), 0); }

/* TF names the Consts a wrapper creates "<op>/<arg>" ("Reshape/shape"): reserve-free
 * peek at the op's unique name, push "<name>/" as the scope for the Consts, and write
 * the op's name relative to the current scope into rel (pass it to the builder after
 * vg_graph_pop_scope). */
void vg__array_name_push(vg_graph *g, const char *name, char *rel, size_t len) {
    char full[1024], sc[1040];
    vg_graph_unique_name(g, name, full, sizeof full);
    size_t sl = strlen(vg_graph_scope(g));
    snprintf(rel, len, "%s", full + (sl ? sl + 1 : 0));
    snprintf(sc, sizeof sc, "%s/", full);
    vg_graph_push_scope(g, sc);
}

/* A Const of int dtype dt (INT32 or INT64) from n values: a vector, or a scalar when
 * `scalar` (n must be 1). */
vg_output vg__array_const_ints(vg_graph *g, vg_dtype dt, const int64_t *v, int n, bool scalar, const char *name) {
    vg_status st;
    int64_t dims[1] = {n};
    vg_tensor *t = vg_tensor_new(dt, dims, scalar ? 0 : 1, &st);
    if (!t) {
        vg_graph_set_error(g, st.code, "%s", st.msg);
        return (vg_output){NULL, 0};
    }
    for (int i = 0; i < n; i++) {
        if (dt == VG_INT64) ((int64_t *)vg_tensor_data(t))[i] = v[i];
        else ((int32_t *)vg_tensor_data(t))[i] = (int32_t)v[i];
    }
    vg_output o = vg_const(g, t, name);
    vg_tensor_free(t);
    return o;
}

/* TF's array_ops.shape(x), but a Const when x's shape is fully known at build time
 * (what TF's constant folding would leave). */
vg_output vg__array_shape_of(vg_graph *g, vg_output x, vg_dtype dt, const char *name) {
    vg_shape s = vg_output_shape(x);
    if (x.op && vg_shape_is_fully_defined(&s)) {
        bool fits = true;
        for (int i = 0; i < s.ndims; i++) fits = fits && s.dims[i] <= INT32_MAX;
        return vg__array_const_ints(g, fits ? dt : VG_INT64, s.dims, s.ndims, false, name ? name : "Shape");
    }
    return vg_shape_op(g, x, dt, name);
}

/* ------------------------------------------------------------------------ */
/* Placeholder, PlaceholderWithDefault, Const */

static vg_code shape_placeholder(vg_op *op, vg_status *st) {
    vg_dtype dt = VG_DTYPE_INVALID;
    if (!vg_op_attr_type_(op, "dtype", &dt) || (dt != VG_STRING && vg_dtype_size(dt) == 0))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "attr dtype must be a valid type, got %s", vg_dtype_name(dt));
    vg_shape s = vg_shape_unknown();
    vg_op_attr_shape(op, "shape", &s);
    return vg__op_set_single_output(op, dt, s);
}

/* Runs only when the placeholder is not fed. */
static vg_code kernel_placeholder(vg__kctx *ctx) {
    const vg_op *op = vg__kctx_op(ctx);
    vg_dtype dt = VG_DTYPE_INVALID;
    vg_shape s = vg_shape_unknown();
    char buf[128];
    vg_op_attr_type_(op, "dtype", &dt);
    vg_op_attr_shape(op, "shape", &s);
    if (s.ndims < 0)
        return vg_status_set(vg__kctx_status(ctx), VG_INVALID_ARGUMENT,
                             "You must feed a value for placeholder tensor '%s' with dtype %s", vg_op_name(op),
                             vg_dtype_name(dt));
    return vg_status_set(vg__kctx_status(ctx), VG_INVALID_ARGUMENT,
                         "You must feed a value for placeholder tensor '%s' with dtype %s and shape %s",
                         vg_op_name(op), vg_dtype_name(dt), shape_str(&s, buf));
}

static vg_code shape_placeholder_with_default(vg_op *op, vg_status *st) {
    if (vg__array_type_attr(op, "dtype", 0, st) != VG_OK) return st->code;
    vg_shape s = vg_shape_unknown(), in = vg__op_input_shape(op, 0);
    vg_op_attr_shape(op, "shape", &s);
    char b1[128], b2[128];
    if (!vg__shapes_compatible(&in, &s))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "default value of shape %s is not compatible with shape %s",
                             shape_str(&in, b1), shape_str(&s, b2));
    return vg__op_set_single_output(op, vg__op_input_dtype(op, 0), s);
}

static vg_code shape_const(vg_op *op, vg_status *st) {
    const vg_tensor *v;
    if (!vg_op_attr_tensor(op, "value", &v)) return vg_status_set(st, VG_INVALID_ARGUMENT, "attr value is missing");
    vg__op_set_default_attr_type(op, "dtype", vg_tensor_dtype(v));
    vg_dtype dt = VG_DTYPE_INVALID;
    vg_op_attr_type_(op, "dtype", &dt);
    if (dt != vg_tensor_dtype(v))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "attr dtype %s does not match the value's type %s",
                             vg_dtype_name(dt), vg_dtype_name(vg_tensor_dtype(v)));
    return vg__op_set_single_output(op, dt, vg_tensor_shape(v));
}

static vg_code kernel_const(vg__kctx *ctx) {
    const vg_tensor *v;
    if (!vg_op_attr_tensor(vg__kctx_op(ctx), "value", &v))
        return vg_status_set(vg__kctx_status(ctx), VG_INTERNAL, "Const has no value");
    /* The graph keeps its reference, so nobody writes into the value in place. */
    vg__kctx_set_output(ctx, 0, vg_tensor_ref((vg_tensor *)v));
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* Identity, StopGradient, NoOp */

static vg_code shape_identity(vg_op *op, vg_status *st) {
    if (vg__array_type_attr(op, "T", 0, st) != VG_OK) return st->code;
    return vg__op_set_single_output(op, vg__op_input_dtype(op, 0), vg__op_input_shape(op, 0));
}

static vg_code kernel_identity(vg__kctx *ctx) {
    vg_tensor *x = vg__kctx_input(ctx, 0);
    if (!x) return vg_status_set(vg__kctx_status(ctx), VG_FAILED_PRECONDITION, "input 0 has no value");
    vg__kctx_set_output(ctx, 0, vg_tensor_ref(x));
    return VG_OK;
}

static vg_code grad_identity(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    dx[0] = dy[0];
    return VG_OK;
}

/* IdentityN (array_ops.cc): N inputs of any types forwarded as N outputs; attr T is
 * the list of their types. */
static vg_code shape_identity_n(vg_op *op, vg_status *st) {
    int n = vg_op_num_inputs(op);
    if (n < 1) return vg_status_set(st, VG_INVALID_ARGUMENT, "IdentityN needs at least one input");
    const vg_dtype *ts;
    int nt;
    if (vg_op_attr_type_list(op, "T", &ts, &nt)) {
        if (nt != n)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "IdentityN: attr T lists %d type(s) for %d input(s)", nt, n);
        for (int i = 0; i < n; i++)
            if (ts[i] != vg__op_input_dtype(op, i))
                return vg_status_set(st, VG_INVALID_ARGUMENT, "IdentityN: input %d is %s, attr T says %s", i,
                                     vg_dtype_name(vg__op_input_dtype(op, i)), vg_dtype_name(ts[i]));
    }
    vg__op_set_num_outputs(op, n);
    for (int i = 0; i < n; i++) vg__op_set_output(op, i, vg__op_input_dtype(op, i), vg__op_input_shape(op, i));
    return VG_OK;
}

static vg_code kernel_identity_n(vg__kctx *ctx) {
    int n = vg__kctx_num_inputs(ctx);
    for (int i = 0; i < n; i++) {
        vg_tensor *x = vg__kctx_input(ctx, i);
        if (!x) return vg_status_set(vg__kctx_status(ctx), VG_FAILED_PRECONDITION, "input %d has no value", i);
        vg__kctx_set_output(ctx, i, vg_tensor_ref(x));
    }
    return VG_OK;
}

static vg_code grad_identity_n(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    (void)g;
    for (int i = 0; i < vg_op_num_inputs(op); i++) dx[i] = dy[i];
    return VG_OK;
}

static vg_code shape_no_op(vg_op *op, vg_status *st) {
    return vg__op_set_no_outputs(op);
}

static vg_code kernel_no_op(vg__kctx *ctx) { return VG_OK; }

/* ------------------------------------------------------------------------ */
/* Reshape */

static vg_code shape_reshape(vg_op *op, vg_status *st) {
    if (vg__array_type_attr(op, "T", 0, st) != VG_OK ||
        vg__array_index_attr(op, "Tshape", 1, "shape", st) != VG_OK)
        return st->code;
    vg_shape sh = vg__op_input_shape(op, 1);
    char b1[128];
    if (vg__shape_need_rank(&sh, 1, "Shape must be rank 1 but is rank %d", st)) return st->code;
    vg_shape out = vg__array_shape_value(op, 1), in = vg__op_input_shape(op, 0);
    if (out.ndims < 0 && sh.ndims == 1 && sh.dims[0] >= 0 && sh.dims[0] <= VG_MAX_DIMS)
        out = vg_shape_make(NULL, (int)sh.dims[0]);
    int64_t nin = vg_shape_num_elements(&in);
    if (out.ndims >= 0 && nin >= 0) {
        int unknown = -1, nunknown = 0;
        int64_t prod = 1;
        for (int i = 0; i < out.ndims; i++) {
            if (out.dims[i] < 0) { unknown = i; nunknown++; }
            else if (__builtin_mul_overflow(prod, out.dims[i], &prod))
                return vg_status_set(st, VG_INVALID_ARGUMENT,
                                     "Shape %s would have more than 2**63 - 1 elements", shape_str(&out, b1));
        }
        if (nunknown == 0 && prod != nin)
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "Cannot reshape a tensor with %lld elements to shape %s (%lld elements)",
                                 (long long)nin, shape_str(&out, b1), (long long)prod);
        if (nunknown == 1 && prod > 0) {
            if (nin % prod != 0)
                return vg_status_set(st, VG_INVALID_ARGUMENT,
                                     "Cannot reshape a tensor with %lld elements to shape %s: not a multiple of %lld",
                                     (long long)nin, shape_str(&out, b1), (long long)prod);
            out.dims[unknown] = nin / prod;
        }
    }
    return vg__op_set_single_output(op, vg__op_input_dtype(op, 0), out);
}

static vg_code kernel_reshape(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg_tensor *x = vg__kctx_input(ctx, 0), *sizes = vg__kctx_input(ctx, 1);
    char buf[128];
    if (vg_tensor_ndims(sizes) != 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "sizes input must be 1-D, not shape %s",
                             vg__tshape_str(sizes, buf, sizeof buf));
    int64_t nd = vg_tensor_dim(sizes, 0);
    if (nd > VG_MAX_DIMS)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Reshape to %lld dimensions: at most %d are supported",
                             (long long)nd, VG_MAX_DIMS);
    /* TF's rule: product of the known non-zero sizes, one -1 inferred. */
    int64_t dims[VG_MAX_DIMS], product = 1;
    int unknown = -1;
    bool sizes_zero = false;
    for (int i = 0; i < nd; i++) {
        int64_t d = vg__int_at(sizes, i);
        dims[i] = d;
        if (d == -1) {
            if (unknown >= 0)
                return vg_status_set(st, VG_INVALID_ARGUMENT, "Only one input size may be -1, not both %d and %d",
                                     unknown, i);
            unknown = i;
        } else if (d < 0) {
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Size %d must be non-negative, not %lld", i, (long long)d);
        } else if (d == 0) {
            sizes_zero = true;
        } else if (__builtin_mul_overflow(product, d, &product)) {
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "Reshape's requested shape has more than 2**63 - 1 elements (dimension %d = %lld)", i,
                                 (long long)d);
        }
    }
    int64_t nx = vg_tensor_num_elements(x);
    if (unknown >= 0) {
        int64_t nin = 1;
        for (int i = 0; i < vg_tensor_ndims(x); i++)
            if ((vg_tensor_dim(x, i) > 0 || !sizes_zero) && __builtin_mul_overflow(nin, vg_tensor_dim(x, i), &nin))
                return vg_status_set(st, VG_INVALID_ARGUMENT,
                                     "Reshape: the input's non-zero dimensions multiply to more than 2**63 - 1");
        int64_t missing = nin / product;
        if (product * missing != nin)
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "Input to reshape is a tensor with %lld values, but the requested shape requires a "
                                 "multiple of %lld", (long long)nx, (long long)product);
        dims[unknown] = missing;
    }
    int64_t total = 1;
    bool overflow = false;
    for (int i = 0; i < nd; i++) overflow |= __builtin_mul_overflow(total, dims[i], &total);
    for (int i = 0; i < nd; i++)
        if (dims[i] == 0) total = 0, overflow = false; /* a zero dim makes the product 0 */
    if (overflow)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Reshape's requested shape has more than 2**63 - 1 elements");
    if (total != nx)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Input to reshape is a tensor with %lld values, but the requested shape has %lld",
                             (long long)nx, (long long)total);
    vg_tensor *out = vg__tensor_alias(x, dims, (int)nd, st);
    if (!out) return st->code;
    vg__kctx_set_output(ctx, 0, out);
    return VG_OK;
}

/* Reshape(dy, Shape(x)) for Reshape, ExpandDims and Squeeze. */
static vg_code grad_reshape_to_input(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output x = vg_op_input(op, 0);
    if (vg_op_num_inputs(op) > 1) dx[1] = (vg_output){NULL, 0};
    dx[0] = vg_reshape(g, dy[0], vg__array_shape_of(g, x, VG_INT32, NULL), NULL);
    return vg_graph_status(g, NULL);
}

/* ------------------------------------------------------------------------ */
/* Shape, Size, Rank */

static vg_code shape_shape_ops(vg_op *op, vg_status *st, int kind /* 0 Shape, 1 Size, 2 Rank */) {
    if (vg__array_type_attr(op, "T", 0, st) != VG_OK) return st->code;
    vg_dtype ot = VG_INT32;
    if (kind != 2) {
        vg__op_set_default_attr_type(op, "out_type", VG_INT32);
        vg_op_attr_type_(op, "out_type", &ot);
        if (ot != VG_INT32 && ot != VG_INT64)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "out_type must be int32 or int64, got %s", vg_dtype_name(ot));
    }
    vg_shape in = vg__op_input_shape(op, 0);
    vg_shape out = vg_shape_make(NULL, 0);
    if (kind == 0) out = in.ndims >= 0 ? vg_shape_make((int64_t[]){in.ndims}, 1) : vg_shape_make(NULL, 1);
    return vg__op_set_single_output(op, ot, out);
}
static vg_code shape_shape(vg_op *op, vg_status *st) { return shape_shape_ops(op, st, 0); }
static vg_code shape_size(vg_op *op, vg_status *st) { return shape_shape_ops(op, st, 1); }
static vg_code shape_rank(vg_op *op, vg_status *st) { return shape_shape_ops(op, st, 2); }

/* Stores v[0..n) into an int32/int64 tensor. */
static void store_ints(vg_tensor *t, const int64_t *v, int64_t n) {
    if (vg_tensor_dtype(t) == VG_INT64) {
        if (n) memcpy(vg_tensor_data(t), v, sizeof(int64_t) * (size_t)n);
    } else {
        int32_t *o = vg_tensor_data(t);
        for (int64_t i = 0; i < n; i++) o[i] = (int32_t)v[i];
    }
}

static vg_code kernel_shape_ops(vg__kctx *ctx, int kind) {
    vg_tensor *x = vg__kctx_input(ctx, 0), *out;
    vg_dtype ot = VG_INT32;
    if (kind != 2) vg_op_attr_type_(vg__kctx_op(ctx), "out_type", &ot);
    int64_t v[VG_MAX_DIMS], nd = vg_tensor_ndims(x), n = 1;
    if (kind == 0) {
        for (int i = 0; i < nd; i++) v[i] = vg_tensor_dim(x, i);
        n = nd;
        if (ot == VG_INT32)
            for (int i = 0; i < nd; i++)
                if (v[i] > INT32_MAX)
                    return vg_status_set(vg__kctx_status(ctx), VG_INVALID_ARGUMENT,
                                         "Shape output type is 32-bit but dim %d is %lld", i, (long long)v[i]);
    } else {
        v[0] = kind == 1 ? vg_tensor_num_elements(x) : nd;
        if (ot == VG_INT32 && v[0] > INT32_MAX)
            return vg_status_set(vg__kctx_status(ctx), VG_INVALID_ARGUMENT,
                                 "Number of elements was larger than representable by 32-bit output type");
    }
    vg_code c = vg__kctx_alloc_output(ctx, 0, ot, &n, kind == 0 ? 1 : 0, &out);
    if (c != VG_OK) return c;
    store_ints(out, v, n);
    return VG_OK;
}
static vg_code kernel_shape(vg__kctx *ctx) { return kernel_shape_ops(ctx, 0); }
static vg_code kernel_size(vg__kctx *ctx) { return kernel_shape_ops(ctx, 1); }
static vg_code kernel_rank(vg__kctx *ctx) { return kernel_shape_ops(ctx, 2); }

/* ------------------------------------------------------------------------ */
/* Fill, ZerosLike, OnesLike */

static vg_code shape_fill(vg_op *op, vg_status *st) {
    if (vg__array_index_attr(op, "index_type", 0, "dims", st) != VG_OK ||
        vg__array_type_attr(op, "T", 1, st) != VG_OK)
        return st->code;
    vg_shape ds = vg__op_input_shape(op, 0), vs = vg__op_input_shape(op, 1);
    if (vg__shape_need_rank(&ds, 1, "dims must be a vector, got a tensor of rank %d", st)) return st->code;
    if (vs.ndims > 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "value must be a scalar, got a tensor of rank %d", vs.ndims);
    vg_shape out = vg__array_shape_value(op, 0);
    const vg_tensor *c = vg__op_const_input(op, 0);
    if (c)
        for (int64_t i = 0; i < vg_tensor_num_elements(c); i++)
            if (vg__int_at(c, i) < 0)
                return vg_status_set(st, VG_INVALID_ARGUMENT, "Dimension %lld must be >= 0",
                                     (long long)vg__int_at(c, i));
    return vg__op_set_single_output(op, vg__op_input_dtype(op, 1), out);
}

/* Fills n elements of esz bytes at dst with the element at v. */
static void fill_bytes(void *dst, const void *v, size_t esz, int64_t n) {
    switch (esz) {
    case 1: memset(dst, *(const uint8_t *)v, (size_t)n); break;
    case 4: {
        uint32_t x, *d = dst;
        memcpy(&x, v, 4);
        for (int64_t i = 0; i < n; i++) d[i] = x;
        break;
    }
    case 8: {
        uint64_t x, *d = dst;
        memcpy(&x, v, 8);
        for (int64_t i = 0; i < n; i++) d[i] = x;
        break;
    }
    default:
        for (int64_t i = 0; i < n; i++) memcpy((char *)dst + (size_t)i * esz, v, esz);
    }
}

static vg_code kernel_fill(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg_tensor *d = vg__kctx_input(ctx, 0), *v = vg__kctx_input(ctx, 1), *out;
    char buf[128];
    if (vg_tensor_ndims(d) != 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "dims must be a vector, got shape %s",
                             vg__tshape_str(d, buf, sizeof buf));
    if (vg_tensor_ndims(v) != 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "value must be a scalar, got shape %s",
                             vg__tshape_str(v, buf, sizeof buf));
    int64_t nd = vg_tensor_dim(d, 0), dims[VG_MAX_DIMS];
    if (nd > VG_MAX_DIMS)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Fill with %lld dimensions: at most %d are supported",
                             (long long)nd, VG_MAX_DIMS);
    for (int i = 0; i < nd; i++)
        if ((dims[i] = vg__int_at(d, i)) < 0)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Dimension %lld must be >= 0", (long long)dims[i]);
    vg_dtype dt = vg_tensor_dtype(v);
    vg_code c = vg__kctx_alloc_output(ctx, 0, dt, dims, (int)nd, &out);
    if (c != VG_OK) return c;
    int64_t n = vg_tensor_num_elements(out);
    if (dt == VG_STRING) {
        size_t len;
        const char *s = vg_tensor_string(v, 0, &len);
        for (int64_t i = 0; i < n; i++)
            if ((c = vg_tensor_set_string(out, i, s, len, st)) != VG_OK) return c;
        return VG_OK;
    }
    fill_bytes(vg_tensor_data(out), vg_tensor_data(v), vg_dtype_size(dt), n);
    return VG_OK;
}

/* Fill's gradient: none for dims, sum(dy) for the value. */
static vg_code grad_fill(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    dx[0] = (vg_output){NULL, 0};
    dx[1] = vg_reduce_sum(g, dy[0], NULL, -1, false, NULL);
    return vg_graph_status(g, NULL);
}

static vg_code shape_like(vg_op *op, vg_status *st) {
    if (vg__array_type_attr(op, "T", 0, st) != VG_OK) return st->code;
    vg_dtype dt = vg__op_input_dtype(op, 0);
    if (dt == VG_STRING || dt == VG_RESOURCE)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "T must be a numeric or bool type, got %s", vg_dtype_name(dt));
    return vg__op_set_single_output(op, dt, vg__op_input_shape(op, 0));
}

static vg_code kernel_like(vg__kctx *ctx, int one) {
    vg_tensor *x = vg__kctx_input(ctx, 0), *out;
    vg_dtype dt = vg_tensor_dtype(x);
    vg_code c = vg__kctx_alloc_output(ctx, 0, dt, vg_tensor_dims(x), vg_tensor_ndims(x), &out);
    if (c != VG_OK) return c;
    int64_t n = vg_tensor_num_elements(out);
    if (!one) {
        if (n) memset(vg_tensor_data(out), 0, vg_tensor_nbytes(out));
        return VG_OK;
    }
    union { float f; double d; int32_t i; int64_t l; uint8_t u; uint16_t h; bool b; float c[2]; double z[2]; } v;
    switch (dt) {
    case VG_COMPLEX64: v.c[0] = 1; v.c[1] = 0; break;
    case VG_COMPLEX128: v.z[0] = 1; v.z[1] = 0; break;
    case VG_FLOAT: v.f = 1; break;
    case VG_DOUBLE: v.d = 1; break;
    case VG_INT32: v.i = 1; break;
    case VG_INT64: v.l = 1; break;
    case VG_BOOL: v.b = true; break;
    case VG_HALF: v.h = 0x3c00; break; /* binary16 1.0 */
    case VG_BFLOAT16: v.h = 0x3f80; break; /* bfloat16 1.0 */
    default: v.u = 1; break;
    }
    fill_bytes(vg_tensor_data(out), &v, vg_dtype_size(dt), n);
    return VG_OK;
}
static vg_code kernel_zeros_like(vg__kctx *ctx) { return kernel_like(ctx, 0); }
static vg_code kernel_ones_like(vg__kctx *ctx) { return kernel_like(ctx, 1); }

/* ------------------------------------------------------------------------ */
/* ExpandDims, Squeeze */

static vg_code shape_expand_dims(vg_op *op, vg_status *st) {
    if (vg__array_type_attr(op, "T", 0, st) != VG_OK || vg__array_index_attr(op, "Tdim", 1, "dim", st) != VG_OK)
        return st->code;
    vg_shape in = vg__op_input_shape(op, 0), out = vg_shape_unknown();
    const vg_tensor *d = vg__op_const_input(op, 1);
    if (d && vg_tensor_num_elements(d) != 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "'dim' input must be a tensor with a single value");
    if (in.ndims >= VG_MAX_DIMS)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "ExpandDims of a rank-%d tensor: at most %d dimensions",
                             in.ndims, VG_MAX_DIMS);
    if (in.ndims >= 0 && d) {
        int64_t dim = vg__int_at(d, 0);
        if (dim < -1 - in.ndims || dim > in.ndims)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Tried to expand dim index %lld for tensor with %d dimensions.",
                                 (long long)dim, in.ndims);
        if (dim < 0) dim += in.ndims + 1;
        out.ndims = in.ndims + 1;
        for (int i = 0, k = 0; i < out.ndims; i++) out.dims[i] = i == dim ? 1 : in.dims[k++];
    } else if (in.ndims >= 0) {
        out = vg_shape_make(NULL, in.ndims + 1);
    }
    return vg__op_set_single_output(op, vg__op_input_dtype(op, 0), out);
}

static vg_code kernel_expand_dims(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg_tensor *x = vg__kctx_input(ctx, 0), *d = vg__kctx_input(ctx, 1);
    if (vg_tensor_num_elements(d) != 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "'dim' must be a tensor with a single value");
    int r = vg_tensor_ndims(x);
    int64_t dim = vg__int_at(d, 0);
    if (dim < -1 - r || dim > r)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Tried to expand dim index %lld for tensor with %d dimensions.",
                             (long long)dim, r);
    if (r >= VG_MAX_DIMS)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "ExpandDims of a rank-%d tensor: at most %d dimensions", r,
                             VG_MAX_DIMS);
    if (dim < 0) dim += r + 1;
    int64_t dims[VG_MAX_DIMS];
    for (int i = 0, k = 0; i <= r; i++) dims[i] = i == dim ? 1 : vg_tensor_dim(x, k++);
    vg_tensor *out = vg__tensor_alias(x, dims, r + 1, st);
    if (!out) return st->code;
    vg__kctx_set_output(ctx, 0, out);
    return VG_OK;
}

/* Marks in sq[] the dims to squeeze of a rank-r shape from the squeeze_dims attr
 * (empty: every dim of size 1; dims[i] < 0 = unknown). Returns VG_OK or an error;
 * *unknown is set when an unknown dim makes the result rank unknown. */
static vg_code squeeze_plan(const vg_op *op, int r, const int64_t *dims, bool *sq, bool *unknown, vg_status *st) {
    const int64_t *ax = NULL;
    int nax = 0;
    vg_op_attr_int_list(op, "squeeze_dims", &ax, &nax);
    *unknown = false;
    for (int i = 0; i < r; i++) sq[i] = false;
    for (int k = 0; k < nax; k++) {
        int64_t a = ax[k];
        if (a < -r || a >= r)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Tried to squeeze dim index %lld for tensor with %d dimensions.",
                                 (long long)a, r);
        if (a < 0) a += r;
        if (dims[a] >= 0 && dims[a] != 1)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Can not squeeze dim[%lld], expected a dimension of 1, got %lld",
                                 (long long)a, (long long)dims[a]);
        sq[a] = true;
    }
    if (nax == 0)
        for (int i = 0; i < r; i++) {
            if (dims[i] < 0) *unknown = true;
            sq[i] = dims[i] == 1;
        }
    return VG_OK;
}

static vg_code shape_squeeze(vg_op *op, vg_status *st) {
    if (vg__array_type_attr(op, "T", 0, st) != VG_OK) return st->code;
    vg_shape in = vg__op_input_shape(op, 0), out = vg_shape_unknown();
    if (in.ndims >= 0) {
        bool sq[VG_MAX_DIMS], unknown;
        if (squeeze_plan(op, in.ndims, in.dims, sq, &unknown, st) != VG_OK) return st->code;
        if (!unknown) {
            out.ndims = 0;
            for (int i = 0; i < in.ndims; i++)
                if (!sq[i]) out.dims[out.ndims++] = in.dims[i];
        }
    }
    return vg__op_set_single_output(op, vg__op_input_dtype(op, 0), out);
}

static vg_code kernel_squeeze(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg_tensor *x = vg__kctx_input(ctx, 0);
    int r = vg_tensor_ndims(x), nd = 0;
    bool sq[VG_MAX_DIMS], unknown;
    if (squeeze_plan(vg__kctx_op(ctx), r, vg_tensor_dims(x), sq, &unknown, st) != VG_OK) return st->code;
    int64_t dims[VG_MAX_DIMS];
    for (int i = 0; i < r; i++)
        if (!sq[i]) dims[nd++] = vg_tensor_dim(x, i);
    vg_tensor *out = vg__tensor_alias(x, dims, nd, st);
    if (!out) return st->code;
    vg__kctx_set_output(ctx, 0, out);
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* Range */

static double scalar_as_double(const vg_tensor *t) { return vg_tensor_scalar(t); }

/* TF's size rule: integers ceil(|limit - start| / |delta|), floats ceil(|(limit - start) / delta|).
 * Returns -1 with st set on bad arguments. */
static int64_t range_size(vg_dtype dt, const vg_tensor *s, const vg_tensor *l, const vg_tensor *d, vg_status *st) {
    bool is_int = dt == VG_INT32 || dt == VG_INT64;
    int64_t si = 0, li = 0, di = 0;
    double sf = scalar_as_double(s), lf = scalar_as_double(l), df = scalar_as_double(d);
    if (is_int) {
        si = vg__int_at(s, 0);
        li = vg__int_at(l, 0);
        di = vg__int_at(d, 0);
    }
    bool dpos = is_int ? di > 0 : df > 0, dzero = is_int ? di == 0 : df == 0;
    bool le = is_int ? si <= li : sf <= lf, ge = is_int ? si >= li : sf >= lf;
    char a[64], b[64];
    if (is_int) { snprintf(a, sizeof a, "%lld", (long long)si); snprintf(b, sizeof b, "%lld", (long long)li); }
    else { snprintf(a, sizeof a, "%g", sf); snprintf(b, sizeof b, "%g", lf); }
    if (dzero) { vg_status_set(st, VG_INVALID_ARGUMENT, "Requires delta != 0: 0"); return -1; }
    if (dpos && !le) { vg_status_set(st, VG_INVALID_ARGUMENT, "Requires start <= limit when delta > 0: %s/%s", a, b); return -1; }
    if (!dpos && !ge) { vg_status_set(st, VG_INVALID_ARGUMENT, "Requires start >= limit when delta < 0: %s/%s", a, b); return -1; }
    if (is_int) {
        /* |limit - start| and |delta| in uint64 (exact for every int64 pair, no signed
         * overflow), then ceil(span / ad) without forming span + ad - 1. */
        uint64_t span = li > si ? (uint64_t)li - (uint64_t)si : (uint64_t)si - (uint64_t)li;
        uint64_t ad = di < 0 ? 0 - (uint64_t)di : (uint64_t)di;
        uint64_t n = span / ad + (span % ad != 0);
        if (n > (uint64_t)INT64_MAX) {
            vg_status_set(st, VG_INVALID_ARGUMENT, "Requires ((limit - start) / delta) <= %lld: %s/%s/%lld",
                          (long long)INT64_MAX, a, b, (long long)di);
            return -1;
        }
        return (int64_t)n;
    }
    double n = ceil(fabs((lf - sf) / df));
    if (!(n < 9223372036854775808.0)) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "Requires ((limit - start) / delta) <= %lld: %s/%s/%g",
                      (long long)INT64_MAX, a, b, df);
        return -1;
    }
    return (int64_t)n;
}

static vg_code shape_range(vg_op *op, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, 0);
    if (dt != VG_INT32 && dt != VG_INT64 && dt != VG_FLOAT && dt != VG_DOUBLE)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Tidx must be int32, int64, float or double, got %s",
                             vg_dtype_name(dt));
    for (int i = 0; i < 3; i++) {
        static const char *names[3] = {"start", "limit", "delta"};
        if (vg__op_input_dtype(op, i) != dt)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s is %s but start is %s", names[i],
                                 vg_dtype_name(vg__op_input_dtype(op, i)), vg_dtype_name(dt));
        vg_shape s = vg__op_input_shape(op, i);
        if (s.ndims > 0)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s must be a scalar, got a tensor of rank %d", names[i], s.ndims);
    }
    if (vg__array_type_attr(op, "Tidx", 0, st) != VG_OK) return st->code;
    vg_shape out = vg_shape_make(NULL, 1);
    const vg_tensor *s = vg__op_const_input(op, 0), *l = vg__op_const_input(op, 1), *d = vg__op_const_input(op, 2);
    if (s && l && d) {
        int64_t n = range_size(dt, s, l, d, st);
        if (n < 0) return st->code;
        out.dims[0] = n;
    }
    return vg__op_set_single_output(op, dt, out);
}

#define RANGE_FILL(ctype)                                                                          \
    do {                                                                                           \
        ctype *o = vg_tensor_data(out), v = *(const ctype *)vg_tensor_data(s),                      \
              dv = *(const ctype *)vg_tensor_data(d);                                              \
        for (int64_t i = 0; i < n; i++) { o[i] = v; v += dv; }                                     \
    } while (0)

/* Integer ranges wrap in the unsigned type: every element written is in
 * [start, limit) and so representable; only the step past the last one may wrap,
 * which signed arithmetic would make undefined (Range(INT64_MIN, INT64_MAX, INT64_MAX)). */
#define RANGE_FILL_INT(ctype, utype)                                                               \
    do {                                                                                           \
        ctype *o = vg_tensor_data(out);                                                            \
        utype v = (utype) * (const ctype *)vg_tensor_data(s), dv = (utype) * (const ctype *)vg_tensor_data(d); \
        for (int64_t i = 0; i < n; i++) { o[i] = (ctype)v; v += dv; }                              \
    } while (0)

static vg_code kernel_range(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg_tensor *s = vg__kctx_input(ctx, 0), *l = vg__kctx_input(ctx, 1), *d = vg__kctx_input(ctx, 2), *out;
    static const char *names[3] = {"start", "limit", "delta"};
    char buf[128];
    for (int i = 0; i < 3; i++) {
        vg_tensor *t = vg__kctx_input(ctx, i);
        if (vg_tensor_ndims(t) != 0)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s must be a scalar, not shape %s", names[i],
                                 vg__tshape_str(t, buf, sizeof buf));
    }
    vg_dtype dt = vg_tensor_dtype(s);
    int64_t n = range_size(dt, s, l, d, st);
    if (n < 0) return st->code;
    vg_code c = vg__kctx_alloc_output(ctx, 0, dt, &n, 1, &out);
    if (c != VG_OK) return c;
    switch (dt) { /* accumulate as TF does (val += delta) */
    case VG_INT32: RANGE_FILL_INT(int32_t, uint32_t); break;
    case VG_INT64: RANGE_FILL_INT(int64_t, uint64_t); break;
    case VG_FLOAT: RANGE_FILL(float); break;
    default: RANGE_FILL(double); break;
    }
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* Where */

static vg_code shape_where(vg_op *op, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, 0);
    if (dt == VG_STRING || dt == VG_RESOURCE)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "input must be bool or numeric, got %s", vg_dtype_name(dt));
    if (vg__array_type_attr(op, "T", 0, st) != VG_OK) return st->code;
    vg_shape in = vg__op_input_shape(op, 0);
    return vg__op_set_single_output(op, VG_INT64, vg_shape_make((int64_t[]){-1, in.ndims}, 2));
}

/* Element i of x is nonzero (bool/numeric). */
static inline bool nonzero_at(const void *p, vg_dtype dt, int64_t i) {
    switch (dt) {
    case VG_FLOAT: return ((const float *)p)[i] != 0;
    case VG_DOUBLE: return ((const double *)p)[i] != 0;
    case VG_INT32: return ((const int32_t *)p)[i] != 0;
    case VG_INT64: return ((const int64_t *)p)[i] != 0;
    default: return ((const uint8_t *)p)[i] != 0; /* bool, uint8 */
    }
}

static vg_code kernel_where(vg__kctx *ctx) {
    vg_tensor *x = vg__kctx_input(ctx, 0), *out;
    vg_dtype dt = vg_tensor_dtype(x);
    const void *p = vg_tensor_data(x);
    int64_t n = vg_tensor_num_elements(x), cnt = 0;
    int r = vg_tensor_ndims(x);
    for (int64_t i = 0; i < n; i++) cnt += nonzero_at(p, dt, i);
    int64_t dims[2] = {cnt, r};
    vg_code c = vg__kctx_alloc_output(ctx, 0, VG_INT64, dims, 2, &out);
    if (c != VG_OK) return c;
    int64_t *o = vg_tensor_data(out), idx[VG_MAX_DIMS] = {0};
    for (int64_t i = 0; i < n; i++) {
        if (nonzero_at(p, dt, i)) {
            for (int k = 0; k < r; k++) *o++ = idx[k];
        }
        for (int k = r - 1; k >= 0; k--) { /* row-major odometer */
            if (++idx[k] < vg_tensor_dim(x, k)) break;
            idx[k] = 0;
        }
    }
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* BroadcastGradientArgs, InvertPermutation */

static vg_code shape_bcast_args(vg_op *op, vg_status *st) {
    if (vg__array_index_attr(op, "T", 0, "s0", st) != VG_OK) return st->code;
    if (vg__op_input_dtype(op, 1) != vg__op_input_dtype(op, 0))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "s0 and s1 must have the same type, got %s and %s",
                             vg_dtype_name(vg__op_input_dtype(op, 0)), vg_dtype_name(vg__op_input_dtype(op, 1)));
    vg_dtype dt = vg__op_input_dtype(op, 0);
    return vg__op_set_two_outputs(op, dt, vg_shape_make(NULL, 1), dt, vg_shape_make(NULL, 1));
}

/* r0/r1: the axes of the broadcast result along which x0/x1 were stretched (TF's
 * BCast: a side is reduced where its size is 1 and the other's is not). */
static vg_code kernel_bcast_args(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg_tensor *s0 = vg__kctx_input(ctx, 0), *s1 = vg__kctx_input(ctx, 1), *r0, *r1;
    char b0[128], b1[128];
    if (vg_tensor_ndims(s0) != 1 || vg_tensor_ndims(s1) != 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "s0 and s1 must be vectors, got shapes %s and %s",
                             vg__tshape_str(s0, b0, sizeof b0), vg__tshape_str(s1, b1, sizeof b1));
    int64_t n0 = vg_tensor_dim(s0, 0), n1 = vg_tensor_dim(s1, 0), n = n0 > n1 ? n0 : n1;
    int64_t *ia = vg__malloc(sizeof(int64_t) * (size_t)(2 * n + 1)), *ib = ia + n, k0 = 0, k1 = 0;
    if (!ia) return VG_OOM(st, "BroadcastGradientArgs");
    for (int64_t i = 0; i < n; i++) {
        int64_t a = i - (n - n0) >= 0 ? vg__int_at(s0, i - (n - n0)) : 1;
        int64_t b = i - (n - n1) >= 0 ? vg__int_at(s1, i - (n - n1)) : 1;
        if (a == b) continue;
        if (a == 1) ia[k0++] = i;
        else if (b == 1) ib[k1++] = i;
        else {
            vg__free(ia);
            vg_shape x = vg_shape_make(NULL, 0), y = vg_shape_make(NULL, 0);
            x.ndims = (int)(n0 < VG_MAX_DIMS ? n0 : VG_MAX_DIMS);
            y.ndims = (int)(n1 < VG_MAX_DIMS ? n1 : VG_MAX_DIMS);
            for (int j = 0; j < x.ndims; j++) x.dims[j] = vg__int_at(s0, j);
            for (int j = 0; j < y.ndims; j++) y.dims[j] = vg__int_at(s1, j);
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Incompatible shapes: %s vs. %s", shape_str(&x, b0),
                                 shape_str(&y, b1));
        }
    }
    vg_dtype dt = vg_tensor_dtype(s0);
    vg_code c = vg__kctx_alloc_output(ctx, 0, dt, &k0, 1, &r0);
    if (c == VG_OK) c = vg__kctx_alloc_output(ctx, 1, dt, &k1, 1, &r1);
    if (c == VG_OK) {
        store_ints(r0, ia, k0);
        store_ints(r1, ib, k1);
    }
    vg__free(ia);
    return c;
}

static vg_code shape_invert_permutation(vg_op *op, vg_status *st) {
    if (vg__array_index_attr(op, "T", 0, "x", st) != VG_OK) return st->code;
    vg_shape in = vg__op_input_shape(op, 0);
    if (vg__shape_need_rank(&in, 1, "Shape must be rank 1 but is rank %d", st)) return st->code;
    return vg__op_set_single_output(op, vg__op_input_dtype(op, 0), in.ndims < 0 ? vg_shape_make(NULL, 1) : in);
}

static vg_code kernel_invert_permutation(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg_tensor *x = vg__kctx_input(ctx, 0), *out;
    if (vg_tensor_ndims(x) != 1) return vg_status_set(st, VG_INVALID_ARGUMENT, "invert_permutation expects a 1D vector.");
    int64_t n = vg_tensor_dim(x, 0);
    vg_code c = vg__kctx_alloc_output(ctx, 0, vg_tensor_dtype(x), &n, 1, &out);
    if (c != VG_OK) return c;
    int64_t *inv = vg__malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    if (!inv) return VG_OOM(st, "InvertPermutation");
    for (int64_t i = 0; i < n; i++) inv[i] = -1;
    for (int64_t i = 0; i < n; i++) {
        int64_t d = vg__int_at(x, i);
        if (d < 0 || d >= n) c = vg_status_set(st, VG_INVALID_ARGUMENT, "%lld is not between 0 and %lld", (long long)d, (long long)n);
        else if (inv[d] != -1) c = vg_status_set(st, VG_INVALID_ARGUMENT, "%lld is duplicated in the input.", (long long)d);
        if (c != VG_OK) break;
        inv[d] = i;
    }
    if (c == VG_OK) store_ints(out, inv, n);
    vg__free(inv);
    return c;
}

/* ------------------------------------------------------------------------ */
/* builders */

static vg_output fail_out(vg_graph *g, const vg_status *st) {
    vg_graph_set_error(g, st->code, "%s", st->msg);
    return (vg_output){NULL, 0};
}

vg_output vg_placeholder(vg_graph *g, vg_dtype dt, const int64_t *dims, int ndims, const char *name) {
    vg_op_builder *b = vg_op_builder_new(g, "Placeholder", name ? name : "Placeholder");
    vg_op_builder_set_attr_type(b, "dtype", dt);
    vg_op_builder_set_attr_shape(b, "shape", vg_shape_make(dims, ndims));
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_output vg_placeholder_with_default(vg_graph *g, vg_output def, const int64_t *dims, int ndims, const char *name) {
    vg_op_builder *b =
        vg__builder_with_inputs(g, "PlaceholderWithDefault", name, "PlaceholderWithDefault", (vg_output[]){def}, 1);
    if (def.op) vg_op_builder_set_attr_type(b, "dtype", vg_output_dtype(def));
    vg_op_builder_set_attr_shape(b, "shape", vg_shape_make(dims, ndims));
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_output vg_const(vg_graph *g, vg_tensor *t, const char *name) {
    vg_op_builder *b = vg_op_builder_new(g, "Const", name ? name : "Const");
    vg_op_builder_set_attr_tensor(b, "value", t);
    if (t) vg_op_builder_set_attr_type(b, "dtype", vg_tensor_dtype(t));
    return vg_out(vg_op_builder_finish(b), 0);
}

/* Wraps a freshly made tensor (NULL = failed, st says why) as a Const, dropping our reference. */
static vg_output const_owned(vg_graph *g, vg_tensor *t, const vg_status *st, const char *name) {
    if (!t) return fail_out(g, st);
    vg_output o = vg_const(g, t, name);
    vg_tensor_free(t);
    return o;
}

vg_output vg_const_f32(vg_graph *g, float v, const char *name) {
    vg_status st;
    return const_owned(g, vg_tensor_new_scalar_f32(v, &st), &st, name);
}

vg_output vg_const_f64(vg_graph *g, double v, const char *name) {
    vg_status st;
    vg_tensor *t = vg_tensor_new(VG_DOUBLE, NULL, 0, &st);
    if (t) *(double *)vg_tensor_data(t) = v;
    return const_owned(g, t, &st, name);
}

vg_output vg_const_i32(vg_graph *g, int32_t v, const char *name) {
    vg_status st;
    return const_owned(g, vg_tensor_new_scalar_i32(v, &st), &st, name);
}

vg_output vg_const_i64(vg_graph *g, int64_t v, const char *name) {
    vg_status st;
    return const_owned(g, vg_tensor_new_scalar_i64(v, &st), &st, name);
}

vg_output vg_const_bool(vg_graph *g, bool v, const char *name) {
    vg_status st;
    return const_owned(g, vg_tensor_new_scalar_bool(v, &st), &st, name);
}

vg_output vg_const_string(vg_graph *g, const char *s, const char *name) {
    vg_status st;
    return const_owned(g, vg_tensor_new_string_scalar(s ? s : "", s ? strlen(s) : 0, &st), &st, name);
}

/* For VG_STRING, values is an array of NUL-terminated C strings. */
vg_output vg_const_array(vg_graph *g, vg_dtype dt, const int64_t *dims, int ndims, const void *values,
                         const char *name) {
    vg_status st;
    vg_tensor *t = vg_tensor_new(dt, dims, ndims, &st);
    if (t && dt == VG_STRING) {
        const char *const *s = values;
        for (int64_t i = 0; i < vg_tensor_num_elements(t); i++)
            if (vg_tensor_set_string(t, i, s[i], strlen(s[i]), &st) != VG_OK) {
                vg_tensor_free(t);
                t = NULL;
                break;
            }
    } else if (t && vg_tensor_nbytes(t)) {
        memcpy(vg_tensor_data(t), values, vg_tensor_nbytes(t));
    }
    return const_owned(g, t, &st, name);
}

vg_output vg_const_i32_vec(vg_graph *g, const int32_t *v, int n, const char *name) {
    int64_t d = n;
    return vg_const_array(g, VG_INT32, &d, 1, v, name);
}

vg_output vg_const_fill(vg_graph *g, vg_dtype dt, const int64_t *dims, int ndims, double value, const char *name) {
    vg_status st;
    vg_tensor *t = vg_tensor_new(dt, dims, ndims, &st);
    if (t && dt == VG_STRING) {
        vg_tensor_free(t);
        vg_status_set(&st, VG_INVALID_ARGUMENT, "vg_const_fill does not take string tensors");
        t = NULL;
    }
    if (t) {
        union { float f; double d; int32_t i; int64_t l; uint8_t u; uint16_t h; bool b; float c[2]; double z[2]; } v;
        switch (dt) {
        case VG_COMPLEX64: v.c[0] = (float)value; v.c[1] = 0; break; /* value + 0i */
        case VG_COMPLEX128: v.z[0] = value; v.z[1] = 0; break;
        case VG_FLOAT: v.f = (float)value; break;
        case VG_DOUBLE: v.d = value; break;
        case VG_INT32: v.i = (int32_t)value; break;
        case VG_INT64: v.l = (int64_t)value; break;
        case VG_BOOL: v.b = value != 0; break;
        case VG_HALF: v.h = vg_float_to_half((float)value); break;
        case VG_BFLOAT16: v.h = vg_float_to_bfloat16((float)value); break;
        default: v.u = (uint8_t)value; break;
        }
        fill_bytes(vg_tensor_data(t), &v, vg_dtype_size(dt), vg_tensor_num_elements(t));
    }
    return const_owned(g, t, &st, name);
}

/* A Python-tuple rendering of a shape, as TF's TypeError shows it: "(2, 4)", "(6,)", "()". */
static void tuple_str(const int64_t *dims, int nd, char *buf, size_t len) {
    size_t o = (size_t)snprintf(buf, len, "(");
    for (int i = 0; i < nd && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s%lld", i ? ", " : "", (long long)dims[i]);
    if (o < len) snprintf(buf + o, len - o, nd == 1 ? ",)" : ")");
}

/* Element i of the value list as the dtype's C value, stored at dst. */
static void put_value(void *dst, vg_dtype dt, double v) {
    switch (dt) {
    case VG_FLOAT: *(float *)dst = (float)v; break;
    case VG_DOUBLE: *(double *)dst = v; break;
    case VG_INT32: *(int32_t *)dst = (int32_t)v; break;
    case VG_INT64: *(int64_t *)dst = (int64_t)v; break;
    case VG_BOOL: *(bool *)dst = v != 0; break;
    case VG_HALF: *(uint16_t *)dst = vg_float_to_half((float)v); break;
    case VG_BFLOAT16: *(uint16_t *)dst = vg_float_to_bfloat16((float)v); break;
    case VG_COMPLEX64: ((float *)dst)[0] = (float)v; ((float *)dst)[1] = 0; break; /* v + 0i */
    case VG_COMPLEX128: ((double *)dst)[0] = v; ((double *)dst)[1] = 0; break;
    default: *(uint8_t *)dst = (uint8_t)v; break;
    }
}

vg_output vg_const_values(vg_graph *g, vg_dtype dt, const double *values, int64_t n, const int64_t *value_dims,
                          int value_ndims, const int64_t *dims, int ndims, bool verify_shape, const char *name) {
    vg_status st;
    if (!g) return (vg_output){NULL, 0};
    if (vg_graph_status(g, NULL) != VG_OK) return (vg_output){NULL, 0};
    if (n < 0 || (n > 0 && !values) || ndims < 0 || ndims > VG_MAX_DIMS || (ndims > 0 && !dims) ||
        value_ndims < 0 || value_ndims > VG_MAX_DIMS || (value_ndims > 0 && !value_dims)) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "constant: bad values or shape");
        return (vg_output){NULL, 0};
    }
    if (dt == VG_STRING || vg_dtype_size(dt) == 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "constant: dtype %s cannot hold numbers", vg_dtype_name(dt));
        return (vg_output){NULL, 0};
    }
    /* the value's own shape: value_dims, or [n] when not given (a flat list) */
    int64_t vd[VG_MAX_DIMS];
    int vnd = value_dims ? value_ndims : 1;
    if (value_dims) memcpy(vd, value_dims, sizeof(int64_t) * (size_t)value_ndims);
    else vd[0] = n;
    int64_t vsize = 1, size = 1;
    for (int i = 0; i < vnd; i++) vsize *= vd[i];
    for (int i = 0; i < ndims; i++) {
        if (dims[i] < 0) {
            vg_graph_set_error(g, VG_INVALID_ARGUMENT, "constant: shape dimension %d is %lld", i, (long long)dims[i]);
            return (vg_output){NULL, 0};
        }
        size *= dims[i];
    }
    if (vsize != n) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "constant: %lld values do not fill the value shape of %lld elements",
                           (long long)n, (long long)vsize);
        return (vg_output){NULL, 0};
    }
    /* make_tensor_proto(values, shape, verify_shape): */
    if (size > 0) {
        bool same = vnd == ndims;
        for (int i = 0; same && i < ndims; i++) same = vd[i] == dims[i];
        if (verify_shape && !same) {
            char want[200], got[200];
            tuple_str(dims, ndims, want, sizeof want);
            tuple_str(vd, vnd, got, sizeof got);
            /* TF's TypeError (vigil: INVALID_ARGUMENT) */
            vg_graph_set_error(g, VG_INVALID_ARGUMENT, "Expected Tensor's shape: %s, got %s.", want, got);
            return (vg_output){NULL, 0};
        }
        if (n > size) {
            vg_graph_set_error(g, VG_INVALID_ARGUMENT, "Too many elements provided. Needed at most %lld, but received %lld",
                               (long long)size, (long long)n);
            return (vg_output){NULL, 0};
        }
    }
    vg_tensor *t = vg_tensor_new(dt, dims, ndims, &st);
    if (t) {
        /* fewer values than elements: the last one repeats (zeros when there is none), as
         * a TensorProto with fewer values than its shape is read */
        size_t esz = vg_dtype_size(dt);
        char *d = vg_tensor_data(t);
        for (int64_t i = 0; i < size; i++)
            put_value(d + (size_t)i * esz, dt, n == 0 ? 0.0 : values[i < n ? i : n - 1]);
    }
    return const_owned(g, t, &st, name ? name : "Const");
}

static vg_output unary(vg_graph *g, const char *type, vg_output x, const char *name) {
    return vg__build_simple(g, type, name, NULL, (vg_output[]){x}, 1);
}

vg_output vg_identity(vg_graph *g, vg_output x, const char *name) {
    return unary(g, "Identity", x, name ? name : "Identity");
}

vg_op *vg_identity_n(vg_graph *g, const vg_output *xs, int n, const char *name) {
    vg_op_builder *b = vg_op_builder_new(g, "IdentityN", name ? name : "IdentityN");
    for (int i = 0; i < n; i++) vg_op_builder_add_input(b, xs[i]);
    return vg_op_builder_finish(b);
}

vg_output vg_stop_gradient(vg_graph *g, vg_output x, const char *name) {
    return unary(g, "StopGradient", x, name ? name : "StopGradient");
}

vg_op *vg_no_op(vg_graph *g, const char *name) {
    return vg_op_builder_finish(vg_op_builder_new(g, "NoOp", name ? name : "NoOp"));
}

vg_op *vg_group(vg_graph *g, vg_op *const *ops, int n, const char *name) {
    vg_op_builder *b = vg_op_builder_new(g, "NoOp", name ? name : "group_deps");
    for (int i = 0; i < n; i++) vg_op_builder_add_control_input(b, ops[i]);
    return vg_op_builder_finish(b);
}

vg_output vg_reshape(vg_graph *g, vg_output x, vg_output shape, const char *name) {
    return vg__build_simple(g, "Reshape", name, "Reshape", (vg_output[]){x, shape}, 2);
}

vg_output vg_reshape_c(vg_graph *g, vg_output x, const int64_t *dims, int ndims, const char *name) {
    char rel[1024];
    bool fits = true;
    for (int i = 0; i < ndims; i++) fits = fits && dims[i] >= INT32_MIN && dims[i] <= INT32_MAX;
    vg__array_name_push(g, name ? name : "Reshape", rel, sizeof rel);
    vg_output s = vg__array_const_ints(g, fits ? VG_INT32 : VG_INT64, dims, ndims, false, "shape");
    vg_graph_pop_scope(g);
    return vg_reshape(g, x, s, rel);
}

vg_output vg_shape_op(vg_graph *g, vg_output x, vg_dtype out_type, const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, "Shape", name, "Shape", (vg_output[]){x}, 1);
    vg_op_builder_set_attr_type(b, "out_type", out_type);
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_output vg_size(vg_graph *g, vg_output x, const char *name) { return unary(g, "Size", x, name ? name : "Size"); }
vg_output vg_rank(vg_graph *g, vg_output x, const char *name) { return unary(g, "Rank", x, name ? name : "Rank"); }

vg_output vg_fill(vg_graph *g, vg_output dims, vg_output value, const char *name) {
    return vg__build_simple(g, "Fill", name, "Fill", (vg_output[]){dims, value}, 2);
}

vg_output vg_zeros_like(vg_graph *g, vg_output x, const char *name) {
    return unary(g, "ZerosLike", x, name ? name : "zeros_like");
}

vg_output vg_ones_like(vg_graph *g, vg_output x, const char *name) {
    return unary(g, "OnesLike", x, name ? name : "ones_like");
}

/* zeros_like / ones_like with TF's dtype argument, for another dtype than x's: under
 * the name scope, a Const of x's shape when it is fully known (zeros_like_impl's
 * `zeros(tensor.shape, dtype)`, ones_like_impl's constant-folded shape), else
 * Fill(Shape(x), value) (array_ops.zeros / ones), the result carrying x's static shape. */
static vg_output like_dtype(vg_graph *g, vg_output x, vg_dtype dt, double value, const char *scope) {
    if (!g || vg_graph_status(g, NULL) != VG_OK) return (vg_output){NULL, 0};
    if (!x.op) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: no input tensor", scope);
        return (vg_output){NULL, 0};
    }
    if (dt == VG_STRING || dt == VG_RESOURCE || vg_dtype_size(dt) == 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: dtype must be a numeric or bool type, got %s", scope,
                           vg_dtype_name(dt));
        return (vg_output){NULL, 0};
    }
    vg_shape s = vg_output_shape(x);
    if (vg_shape_is_fully_defined(&s)) return vg_const_fill(g, dt, s.dims, s.ndims, value, scope);
    char rel[1024];
    vg__array_name_push(g, scope, rel, sizeof rel);
    vg_output shape = vg_shape_op(g, x, VG_INT32, "Shape");
    vg_output v = vg_const_fill(g, dt, NULL, 0, value, "Const");
    vg_graph_pop_scope(g);
    vg_output out = vg_fill(g, shape, v, rel);
    if (out.op && s.ndims >= 0) vg__op_set_output(out.op, 0, dt, s); /* ret.set_shape(tensor.get_shape()) */
    return out;
}

vg_output vg_zeros_like_dtype(vg_graph *g, vg_output x, vg_dtype dt, const char *name) {
    if (dt == VG_DTYPE_INVALID || (x.op && dt == vg_output_dtype(x))) return vg_zeros_like(g, x, name);
    return like_dtype(g, x, dt, 0.0, name ? name : "zeros_like");
}

vg_output vg_ones_like_dtype(vg_graph *g, vg_output x, vg_dtype dt, const char *name) {
    if (dt == VG_DTYPE_INVALID || (x.op && dt == vg_output_dtype(x))) return vg_ones_like(g, x, name);
    return like_dtype(g, x, dt, 1.0, name ? name : "ones_like");
}

/* TF's shape DebugString: "[2,?]", "?" for an unknown rank. */
static void debug_shape(const vg_shape *s, char *buf, size_t len) {
    if (s->ndims < 0) {
        snprintf(buf, len, "?");
        return;
    }
    size_t o = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < s->ndims && o < len; i++) {
        if (s->dims[i] < 0) o += (size_t)snprintf(buf + o, len - o, "%s?", i ? "," : "");
        else o += (size_t)snprintf(buf + o, len - o, "%s%lld", i ? "," : "", (long long)s->dims[i]);
    }
    if (o < len) snprintf(buf + o, len - o, "]");
}

vg_code vg_set_shape(vg_output t, const int64_t *dims, int ndims, vg_status *st) {
    if (!t.op || t.index < 0 || t.index >= vg_op_num_outputs(t.op))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "set_shape: not an output of an op");
    if (ndims > VG_MAX_DIMS || (ndims > 0 && !dims))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "set_shape: bad shape (rank %d)", ndims);
    vg_shape want = ndims < 0 ? vg_shape_unknown() : vg_shape_make(dims, ndims);
    for (int i = 0; i < want.ndims; i++)
        if (want.dims[i] < -1)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "set_shape: dimension %d is %lld", i, (long long)want.dims[i]);
    vg_shape have = vg_output_shape(t), merged = have;
    /* ShapeRefiner::SetShape: InferenceContext::Merge(existing, new) */
    if (want.ndims >= 0) {
        if (have.ndims < 0) {
            merged = want;
        } else if (have.ndims != want.ndims) {
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Shapes must be equal rank, but are %d and %d", have.ndims,
                                 want.ndims);
        } else {
            for (int i = 0; i < have.ndims; i++) {
                if (have.dims[i] >= 0 && want.dims[i] >= 0 && have.dims[i] != want.dims[i]) {
                    char a[200], b[200];
                    debug_shape(&have, a, sizeof a);
                    debug_shape(&want, b, sizeof b);
                    return vg_status_set(st, VG_INVALID_ARGUMENT,
                                         "Dimension %d in both shapes must be equal, but are %lld and %lld. Shapes are "
                                         "%s and %s.", i, (long long)have.dims[i], (long long)want.dims[i], a, b);
                }
                if (have.dims[i] < 0) merged.dims[i] = want.dims[i];
            }
        }
    }
    vg__op_set_output(t.op, t.index, vg_output_dtype(t), merged);
    vg_status_clear(st);
    return VG_OK;
}

vg_output vg_expand_dims(vg_graph *g, vg_output x, int axis, const char *name) {
    char rel[1024];
    int64_t a = axis;
    vg__array_name_push(g, name ? name : "ExpandDims", rel, sizeof rel);
    vg_output d = vg__array_const_ints(g, VG_INT32, &a, 1, true, "dim");
    vg_graph_pop_scope(g);
    return vg__build_simple(g, "ExpandDims", rel, NULL, (vg_output[]){x, d}, 2);
}

vg_output vg_squeeze(vg_graph *g, vg_output x, const int32_t *axes, int naxes, const char *name) {
    int64_t ax[VG_MAX_DIMS];
    if (naxes > VG_MAX_DIMS) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "Squeeze: %d axes given, at most %d", naxes, VG_MAX_DIMS);
        return (vg_output){NULL, 0};
    }
    for (int i = 0; i < naxes; i++) ax[i] = axes[i];
    vg_op_builder *b = vg__builder_with_inputs(g, "Squeeze", name, "Squeeze", (vg_output[]){x}, 1);
    vg_op_builder_set_attr_int_list(b, "squeeze_dims", ax, naxes < 0 ? 0 : naxes);
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_output vg_range(vg_graph *g, vg_output start, vg_output limit, vg_output delta, const char *name) {
    return vg__build_simple(g, "Range", name, "range", (vg_output[]){start, limit, delta}, 3);
}

vg_output vg_invert_permutation(vg_graph *g, vg_output x, const char *name) {
    return unary(g, "InvertPermutation", x, name ? name : "InvertPermutation");
}

vg_output vg_where(vg_graph *g, vg_output cond, const char *name) {
    return unary(g, "Where", cond, name ? name : "Where");
}

vg_op *vg_broadcast_gradient_args(vg_graph *g, vg_output s0, vg_output s1, const char *name) {
    vg_op_builder *b =
        vg__builder_with_inputs(g, "BroadcastGradientArgs", name, "BroadcastGradientArgs", (vg_output[]){s0, s1}, 2);
    return vg_op_builder_finish(b);
}

/* ------------------------------------------------------------------------ */
/* op table */

#define ND VG__OP_NOT_DIFFERENTIABLE

const vg__op_def vg__ops_array_shape[] = {
    {"Placeholder", 0, 0, VG__OP_PLACEHOLDER | ND, 0, shape_placeholder, kernel_placeholder, NULL},
    {"PlaceholderWithDefault", 1, 1, 0, 0, shape_placeholder_with_default, kernel_identity, grad_identity},
    {"Const", 0, 0, VG__OP_CONST | ND, 0, shape_const, kernel_const, NULL},
    {"Identity", 1, 1, 0, 0, shape_identity, kernel_identity, grad_identity},
    {"IdentityN", 1, -1, 0, 0, shape_identity_n, kernel_identity_n, grad_identity_n},
    {"StopGradient", 1, 1, ND, 0, shape_identity, kernel_identity, NULL},
    {"NoOp", 0, 0, ND, 0, shape_no_op, kernel_no_op, NULL},
    {"Reshape", 2, 2, 0, 0, shape_reshape, kernel_reshape, grad_reshape_to_input},
    {"Shape", 1, 1, ND, 0, shape_shape, kernel_shape, NULL},
    {"Size", 1, 1, ND, 0, shape_size, kernel_size, NULL},
    {"Rank", 1, 1, ND, 0, shape_rank, kernel_rank, NULL},
    {"Fill", 2, 2, 0, 0, shape_fill, kernel_fill, grad_fill},
    {"ZerosLike", 1, 1, ND, 0, shape_like, kernel_zeros_like, NULL},
    {"OnesLike", 1, 1, ND, 0, shape_like, kernel_ones_like, NULL},
    {"ExpandDims", 2, 2, 0, 0, shape_expand_dims, kernel_expand_dims, grad_reshape_to_input},
    {"Squeeze", 1, 1, 0, 0, shape_squeeze, kernel_squeeze, grad_reshape_to_input},
    {"Range", 3, 3, ND, 0, shape_range, kernel_range, NULL},
    {"Where", 1, 1, ND, 0, shape_where, kernel_where, NULL},
    {"BroadcastGradientArgs", 2, 2, ND, 0, shape_bcast_args, kernel_bcast_args, NULL},
    {"InvertPermutation", 1, 1, ND, 0, shape_invert_permutation, kernel_invert_permutation, NULL},
    {0},
};
