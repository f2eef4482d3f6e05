/*
 * ew_util.c - the shared element-wise drivers of ew_internal.h (no ops of its own).
 */
#include "kernels/ew_internal.h"
#include <stdio.h>
#include <string.h>

#define EW_PAR_MIN 32768

static const char *dtypes_of(bool f32, bool f64, bool i32, bool i64, bool u8, char *buf, size_t len) {
    snprintf(buf, len, "%s%s%s%s%s", f32 ? "float " : "", f64 ? "double " : "", i32 ? "int32 " : "",
             i64 ? "int64 " : "", u8 ? "uint8 " : "");
    size_t n = strlen(buf);
    if (n) buf[n - 1] = 0;
    return buf;
}

static vg_code unsupported(vg_op *op, vg_dtype dt, const char *allowed, vg_status *st) {
    return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: input has dtype %s, which is not supported (allowed: %s)",
                         vg_op_type(op), vg_dtype_name(dt), allowed);
}

static vg_code check_type_attr(vg_op *op, vg_dtype dt, vg_status *st) {
    vg_dtype t;
    if (vg_op_attr_type_(op, "T", &t) && t != dt)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "attr 'T' is %s but the input has dtype %s",
                             vg_dtype_name(t), vg_dtype_name(dt));
    vg__op_set_default_attr_type(op, "T", dt);
    return VG_OK;
}

static vg__ew_un_fn un_pick(const vg__ew_un_tbl *t, vg_dtype dt) {
    switch (dt) {
    case VG_FLOAT: return t->f32;
    case VG_DOUBLE: return t->f64;
    case VG_INT32: return t->i32;
    case VG_INT64: return t->i64;
    default: return NULL;
    }
}

vg_code vg__ew_unary_shape(vg_op *op, const vg__ew_un_tbl *tbl, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, 0);
    if (!un_pick(tbl, dt)) {
        char buf[64];
        return unsupported(op, dt, dtypes_of(tbl->f32, tbl->f64, tbl->i32, tbl->i64, false, buf, sizeof buf), st);
    }
    vg_code c = check_type_attr(op, dt, st);
    if (c != VG_OK) return c;
    return vg__op_set_single_output(op, dt, vg__op_input_shape(op, 0));
}

typedef struct un_job {
    vg__ew_un_fn fn;
    const char *x;
    char *o;
    size_t esz;
    double attr;
} un_job;

static void un_run(void *arg, int64_t b, int64_t e) {
    const un_job *j = arg;
    j->fn(j->x + (size_t)b * j->esz, j->o + (size_t)b * j->esz, e - b, j->attr);
}

typedef struct bin_job {
    vg__ew_bin_fn fn;
    const char *a, *b;
    char *o;
    size_t esz;
    double attr;
} bin_job;

static void bin_run(void *arg, int64_t b, int64_t e) {
    const bin_job *j = arg;
    j->fn(j->a + (size_t)b * j->esz, j->b + (size_t)b * j->esz, j->o + (size_t)b * j->esz, e - b, j->attr);
}

static double float_attr(const vg_op *op, const char *name, double def) {
    float v;
    if (name && vg_op_attr_float(op, name, &v)) return v;
    return def;
}

vg_code vg__ew_unary_kernel(vg__kctx *ctx, const vg__ew_un_tbl *tbl, const char *attr_name, double attr_default) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *x = vg__kctx_input(ctx, 0);
    vg_dtype dt = vg_tensor_dtype(x);
    vg__ew_un_fn fn = un_pick(tbl, dt);
    if (!fn) return vg_status_set(st, VG_INVALID_ARGUMENT, "unsupported dtype %s", vg_dtype_name(dt));
    vg_tensor *o;
    vg_code c = vg__kctx_alloc_output(ctx, 0, dt, vg_tensor_dims(x), vg_tensor_ndims(x), &o);
    if (c != VG_OK) return c;
    int64_t n = vg_tensor_num_elements(x);
    un_job j = {fn, vg_tensor_data(x), vg_tensor_data(o), vg_dtype_size(dt), float_attr(vg__kctx_op(ctx), attr_name, attr_default)};
    if (n * 8 < EW_PAR_MIN) un_run(&j, 0, n);
    else vg__kctx_parallel_for(ctx, n, 8, un_run, &j);
    return VG_OK;
}

vg_code vg__ew_binary_same_shape(vg_op *op, vg_status *st) {
    vg_dtype d0 = vg__op_input_dtype(op, 0), d1 = vg__op_input_dtype(op, 1);
    if (d0 != VG_FLOAT && d0 != VG_DOUBLE) return unsupported(op, d0, "float double", st);
    if (d1 != d0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: input 1 has dtype %s but input 0 has %s", vg_op_type(op),
                             vg_dtype_name(d1), vg_dtype_name(d0));
    vg_shape a = vg__op_input_shape(op, 0), b = vg__op_input_shape(op, 1), o = a.ndims >= 0 ? a : b;
    if (a.ndims >= 0 && b.ndims >= 0) {
        bool ok = a.ndims == b.ndims;
        for (int i = 0; ok && i < a.ndims; i++) {
            if (a.dims[i] < 0) o.dims[i] = b.dims[i];
            else if (b.dims[i] >= 0 && a.dims[i] != b.dims[i]) ok = false;
        }
        if (!ok) {
            char sa[128], sb[128];
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: inputs must have the same shape: %s vs. %s",
                                 vg_op_type(op), vg_shape_str(&a, sa, sizeof sa), vg_shape_str(&b, sb, sizeof sb));
        }
    }
    vg_code c = check_type_attr(op, d0, st);
    if (c != VG_OK) return c;
    return vg__op_set_single_output(op, d0, o);
}

vg_code vg__ew_binary_same_kernel(vg__kctx *ctx, const vg__ew_bin_tbl *tbl, const char *attr_name,
                                  double attr_default) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *a = vg__kctx_input(ctx, 0), *b = vg__kctx_input(ctx, 1);
    vg_dtype dt = vg_tensor_dtype(a);
    vg__ew_bin_fn fn = dt == VG_FLOAT ? tbl->f32 : dt == VG_DOUBLE ? tbl->f64 : NULL;
    if (!fn || vg_tensor_dtype(b) != dt)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "unsupported dtypes %s, %s", vg_dtype_name(dt),
                             vg_dtype_name(vg_tensor_dtype(b)));
    int nd = vg_tensor_ndims(a);
    if (nd != vg_tensor_ndims(b) || (nd && memcmp(vg_tensor_dims(a), vg_tensor_dims(b), sizeof(int64_t) * (size_t)nd))) {
        vg_shape sa = vg_tensor_shape(a), sb = vg_tensor_shape(b);
        char xa[128], xb[128];
        return vg_status_set(st, VG_INVALID_ARGUMENT, "inputs must have the same shape: %s vs. %s",
                             vg_shape_str(&sa, xa, sizeof xa), vg_shape_str(&sb, xb, sizeof xb));
    }
    vg_tensor *o;
    vg_code c = vg__kctx_alloc_output(ctx, 0, dt, vg_tensor_dims(a), nd, &o);
    if (c != VG_OK) return c;
    int64_t n = vg_tensor_num_elements(a);
    bin_job j = {fn, vg_tensor_data(a), vg_tensor_data(b), vg_tensor_data(o), vg_dtype_size(dt),
                 float_attr(vg__kctx_op(ctx), attr_name, attr_default)};
    if (n * 8 < EW_PAR_MIN) {
        if (n) bin_run(&j, 0, n);
    } else {
        vg__kctx_parallel_for(ctx, n, 8, bin_run, &j);
    }
    return VG_OK;
}

/* ---- broadcasting, one element at a time ---------------------------------- */

static vg__ew_elem_fn elem_pick(const vg__ew_elem_tbl *t, vg_dtype dt) {
    switch (dt) {
    case VG_FLOAT: return t->f32;
    case VG_DOUBLE: return t->f64;
    case VG_INT32: return t->i32;
    case VG_INT64: return t->i64;
    case VG_UINT8: return t->u8;
    default: return NULL;
    }
}

vg_code vg__ew_bcast_shape(vg_op *op, const vg__ew_elem_tbl *tbl, vg_status *st) {
    vg_dtype da = vg__op_input_dtype(op, 0), db = vg__op_input_dtype(op, 1);
    if (!elem_pick(tbl, da)) {
        char buf[64];
        return unsupported(op, da, dtypes_of(tbl->f32, tbl->f64, tbl->i32, tbl->i64, tbl->u8, buf, sizeof buf), st);
    }
    if (db != da)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Input 'y' of '%s' Op has type %s that does not match type %s of argument 'x'.",
                             vg_op_type(op), vg_dtype_name(db), vg_dtype_name(da));
    vg_code c = check_type_attr(op, da, st);
    if (c != VG_OK) return c;
    vg_shape sa = vg__op_input_shape(op, 0), sb = vg__op_input_shape(op, 1), so;
    if ((c = vg__shape_broadcast(&sa, &sb, &so, st)) != VG_OK) return c;
    return vg__op_set_single_output(op, da, so);
}

static bool has_zero(const vg_tensor *t) {
    size_t esz = vg_dtype_size(vg_tensor_dtype(t));
    const unsigned char *p = vg_tensor_data(t);
    int64_t n = vg_tensor_num_elements(t);
    for (int64_t i = 0; i < n; i++) {
        bool zero = true;
        for (size_t k = 0; k < esz; k++) if (p[(size_t)i * esz + k]) { zero = false; break; }
        if (zero) return true;
    }
    return false;
}

vg_code vg__ew_bcast_kernel(vg__kctx *ctx, const vg__ew_elem_tbl *tbl, bool int_div_check) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *a = vg__kctx_input(ctx, 0), *b = vg__kctx_input(ctx, 1);
    vg_dtype dt = vg_tensor_dtype(a);
    vg__ew_elem_fn fn = elem_pick(tbl, dt);
    if (!fn || vg_tensor_dtype(b) != dt)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "unsupported dtypes %s, %s", vg_dtype_name(dt),
                             vg_dtype_name(vg_tensor_dtype(b)));
    if (int_div_check && dt != VG_FLOAT && dt != VG_DOUBLE && has_zero(b))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Integer division by zero");
    int na = vg_tensor_ndims(a), nb = vg_tensor_ndims(b), r = na > nb ? na : nb;
    int64_t od[VG_MAX_DIMS], sa[VG_MAX_DIMS], sb[VG_MAX_DIMS], n = 1;
    int64_t stra = 1, strb = 1;
    for (int i = r - 1; i >= 0; i--) {
        int ia = i - (r - na), ib = i - (r - nb);
        int64_t xa = ia >= 0 ? vg_tensor_dim(a, ia) : 1, xb = ib >= 0 ? vg_tensor_dim(b, ib) : 1;
        if (xa != xb && xa != 1 && xb != 1) {
            vg_shape s1 = vg_tensor_shape(a), s2 = vg_tensor_shape(b);
            char x1[128], x2[128];
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Incompatible shapes: %s vs. %s",
                                 vg_shape_str(&s1, x1, sizeof x1), vg_shape_str(&s2, x2, sizeof x2));
        }
        vg__bcast2_dim(i, xa, xb, od, sa, sb, &stra, &strb);
        n *= od[i];
    }
    vg_tensor *o;
    vg_code c = vg__kctx_alloc_output(ctx, 0, dt, od, r, &o);
    if (c != VG_OK || n == 0) return c;
    size_t esz = vg_dtype_size(dt);
    const char *pa = vg_tensor_data(a), *pb = vg_tensor_data(b);
    char *po = vg_tensor_data(o);
    int64_t idx[VG_MAX_DIMS] = {0}, oa = 0, ob = 0;
    for (int64_t k = 0; k < n; k++) {
        fn(pa + (size_t)oa * esz, pb + (size_t)ob * esz, po + (size_t)k * esz);
        vg__bcast2_next(r, od, sa, sb, idx, &oa, &ob);
    }
    return VG_OK;
}

/* ---- gradients and builders ---------------------------------------------- */

void vg__ew_bcast_reduce(vg_graph *g, vg_op *op, vg_output gx, vg_output gy, vg_output *dx) {
    vg_output x = vg_op_input(op, 0), y = vg_op_input(op, 1);
    vg_output sx = vg_shape_op(g, x, VG_INT32, "Shape"), sy = vg_shape_op(g, y, VG_INT32, "Shape_1");
    vg_op *bga = vg_broadcast_gradient_args(g, sx, sy, "BroadcastGradientArgs");
    if (!bga) return;
    if (gx.op) dx[0] = vg_reshape(g, vg_sum(g, gx, vg_out(bga, 0), false, "Sum"), sx, "Reshape");
    if (gy.op) dx[1] = vg_reshape(g, vg_sum(g, gy, vg_out(bga, 1), false, "Sum_1"), sy, "Reshape_1");
}

vg_output vg__ew_scalar_like(vg_graph *g, vg_output x, double v) {
    return vg_const_fill(g, vg_output_dtype(x), NULL, 0, v, "Const");
}

vg_output vg__ew_build1(vg_graph *g, const char *type, vg_output x, const char *name) {
    return vg__build_simple(g, type, name, NULL, (vg_output[]){x}, 1);
}

vg_output vg__ew_build2(vg_graph *g, const char *type, vg_output x, vg_output y, const char *name) {
    return vg__build_simple(g, type, name, NULL, (vg_output[]){x, y}, 2);
}
