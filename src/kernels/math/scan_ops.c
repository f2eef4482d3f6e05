/*
 * scan_ops.c - Cumsum and Cumprod(x, axis; exclusive, reverse) as TF 1.15's
 * scan_ops.cc (float/double/int32/int64; axis a scalar in [-rank, rank)), gradients as
 * math_grad.py: _CumsumGrad = cumsum(grad, exclusive, reverse = !reverse);
 * _CumprodGrad = cumsum(cumprod(x) * grad, exclusive, !reverse) / x.
 */
#include "kernels/ew_internal.h"

static vg_code scan_shape(vg_op *op, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, 0), at = vg__op_input_dtype(op, 1);
    if (dt != VG_FLOAT && dt != VG_DOUBLE && dt != VG_INT32 && dt != VG_INT64)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: x has dtype %s, which is not supported (allowed: float double int32 int64)",
                             vg_op_type(op), vg_dtype_name(dt));
    if (at != VG_INT32 && at != VG_INT64)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: axis must be int32 or int64", vg_op_type(op));
    vg_shape as = vg__op_input_shape(op, 1);
    if (as.ndims > 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "ScanOp: axis must be a scalar, not rank %d", as.ndims);
    vg__op_set_default_attr_type(op, "T", dt);
    vg__op_set_default_attr_type(op, "Tidx", at);
    vg__op_set_default_attr_bool(op, "exclusive", false);
    vg__op_set_default_attr_bool(op, "reverse", false);
    return vg__op_set_single_output(op, dt, vg__op_input_shape(op, 0));
}

/* The scan runs along the axis one row of `inner` elements at a time: each row is the
 * previous output row OP the input row (exclusive: OP the previous input row), so the
 * inner loop is contiguous and vectorizes while every element sees the same sequence of
 * operations as a scalar scan (acc = INIT OP x[first] OP x[next] ...). */
#define SCAN_LOOP(T, OP, INIT)                                                                    \
    do {                                                                                          \
        const T *restrict x = vg_tensor_data(in);                                                 \
        T *restrict o = vg_tensor_data(out);                                                      \
        for (int64_t a = 0; a < outer; a++) {                                                     \
            const T *xa = x + a * len * inner;                                                    \
            T *oa = o + a * len * inner;                                                          \
            for (int64_t s = 0; s < len; s++) {                                                   \
                int64_t j = rev ? len - 1 - s : s, jp = rev ? j + 1 : j - 1;                      \
                T *restrict orow = oa + j * inner;                                                \
                const T *restrict oprev = oa + jp * inner, *restrict xrow = xa + j * inner;       \
                const T *restrict xprev = xa + jp * inner;                                        \
                if (excl) {                                                                       \
                    if (s == 0) for (int64_t b = 0; b < inner; b++) orow[b] = INIT;               \
                    else for (int64_t b = 0; b < inner; b++) orow[b] = oprev[b] OP xprev[b];      \
                } else {                                                                          \
                    if (s == 0) for (int64_t b = 0; b < inner; b++) orow[b] = (T)(INIT) OP xrow[b]; \
                    else for (int64_t b = 0; b < inner; b++) orow[b] = oprev[b] OP xrow[b];       \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    } while (0)

static vg_code scan_kernel(vg__kctx *ctx, bool prod) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *in = vg__kctx_input(ctx, 0), *at = vg__kctx_input(ctx, 1);
    if (vg_tensor_ndims(at) != 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "ScanOp: axis must be a scalar, not rank %d", vg_tensor_ndims(at));
    int64_t axis = vg_tensor_dtype(at) == VG_INT32 ? *(const int32_t *)vg_tensor_data(at)
                                                  : *(const int64_t *)vg_tensor_data(at);
    int r = vg_tensor_ndims(in);
    if (axis < -r || axis >= r)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "ScanOp: Expected scan axis in the range [%d, %d), but got %lld",
                             -r, r, (long long)axis);
    if (axis < 0) axis += r;
    bool excl = false, rev = false;
    vg_op_attr_bool(vg__kctx_op(ctx), "exclusive", &excl);
    vg_op_attr_bool(vg__kctx_op(ctx), "reverse", &rev);
    vg_tensor *out;
    vg_code c = vg__kctx_alloc_output(ctx, 0, vg_tensor_dtype(in), vg_tensor_dims(in), r, &out);
    if (c != VG_OK) return c;
    int64_t outer = 1, inner = 1, len = vg_tensor_dim(in, (int)axis);
    for (int i = 0; i < axis; i++) outer *= vg_tensor_dim(in, i);
    for (int i = (int)axis + 1; i < r; i++) inner *= vg_tensor_dim(in, i);
    switch (vg_tensor_dtype(in)) {
    case VG_FLOAT: if (prod) SCAN_LOOP(float, *, 1.0f); else SCAN_LOOP(float, +, 0.0f); break;
    case VG_DOUBLE: if (prod) SCAN_LOOP(double, *, 1.0); else SCAN_LOOP(double, +, 0.0); break;
    /* integers wrap through unsigned arithmetic */
    case VG_INT32: if (prod) SCAN_LOOP(uint32_t, *, 1u); else SCAN_LOOP(uint32_t, +, 0u); break;
    case VG_INT64: if (prod) SCAN_LOOP(uint64_t, *, (uint64_t)1); else SCAN_LOOP(uint64_t, +, (uint64_t)0); break;
    default: return vg_status_set(st, VG_INVALID_ARGUMENT, "ScanOp: unsupported dtype");
    }
    return VG_OK;
}

static vg_code kernel_cumsum(vg__kctx *ctx) { return scan_kernel(ctx, false); }
static vg_code kernel_cumprod(vg__kctx *ctx) { return scan_kernel(ctx, true); }

static vg_output scan_build(vg_graph *g, const char *type, vg_output x, vg_output axis, bool exclusive, bool reverse,
                            const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, type, name, NULL, (vg_output[]){x, axis}, 2);
    if (!b) return vg_out(NULL, 0);
    vg_op_builder_set_attr_bool(b, "exclusive", exclusive);
    vg_op_builder_set_attr_bool(b, "reverse", reverse);
    return vg_out(vg_op_builder_finish(b), 0);
}

static void scan_attrs(const vg_op *op, bool *excl, bool *rev) {
    *excl = *rev = false;
    vg_op_attr_bool(op, "exclusive", excl);
    vg_op_attr_bool(op, "reverse", rev);
}

static vg_code grad_cumsum(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    bool excl, rev;
    scan_attrs(op, &excl, &rev);
    dx[0] = scan_build(g, "Cumsum", dy[0], vg_op_input(op, 1), excl, !rev, "Cumsum");
    return vg_graph_status(g, NULL);
}

static vg_code grad_cumprod(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    bool excl, rev;
    scan_attrs(op, &excl, &rev);
    vg_output x = vg_op_input(op, 0), axis = vg_op_input(op, 1);
    vg_output prod = scan_build(g, "Cumprod", x, axis, excl, rev, "Cumprod");
    vg_output out = scan_build(g, "Cumsum", vg_mul(g, prod, dy[0], "mul"), axis, excl, !rev, "Cumsum");
    dx[0] = vg_div(g, out, x, "truediv");
    return vg_graph_status(g, NULL);
}

vg_output vg_cumsum(vg_graph *g, vg_output x, int axis, bool exclusive, bool reverse, const char *name) {
    return scan_build(g, "Cumsum", x, vg_const_i32(g, axis, "Cumsum/axis"), exclusive, reverse, name);
}

vg_output vg_cumprod(vg_graph *g, vg_output x, int axis, bool exclusive, bool reverse, const char *name) {
    return scan_build(g, "Cumprod", x, vg_const_i32(g, axis, "Cumprod/axis"), exclusive, reverse, name);
}

const vg__op_def vg__ops_scan[] = {
    {"Cumsum", 2, 2, 0, 0, scan_shape, kernel_cumsum, grad_cumsum},
    {"Cumprod", 2, 2, 0, 0, scan_shape, kernel_cumprod, grad_cumprod},
    {0},
};
