/*
 * nn_depthwise_ops.c - DepthwiseConv2dNative and its backprops (TF 1.15
 * depthwise_conv_op.cc / depthwise_conv_grad_op.cc semantics), CPU, NHWC, float and
 * double, dilations 1:
 *   input [N,H,W,C], filter [KH,KW,C,M] -> output [N,OH,OW,C*M],
 *   out[n,oy,ox,c*M+m] = sum_{ky,kx} in[n, oy*sh+ky-pt, ox*sw+kx-pl, c] * f[ky,kx,c,m]
 * with TF's SAME / VALID window arithmetic. Gradient (nn_grad.py
 * _DepthwiseConv2dNativeGrad): DepthwiseConv2dNativeBackpropInput(Shape(input), filter,
 * dy) and DepthwiseConv2dNativeBackpropFilter(input, Shape(filter), dy).
 */
#include "kernels/ew_internal.h"
#include "vigil/nn_ext.h"

typedef struct dw_attrs {
    int64_t sh, sw;
    bool same;
} dw_attrs;

static vg_code get_attrs(const vg_op *op, dw_attrs *a, vg_status *st) {
    const int64_t *v;
    int n;
    if (!vg_op_attr_int_list(op, "strides", &v, &n) || n != 4)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: strides must have 4 elements", vg_op_type(op));
    if (v[0] != 1 || v[3] != 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Current implementation does not yet support strides in the batch and depth dimensions.");
    if (v[1] < 1 || v[2] < 1) return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: strides must be positive", vg_op_type(op));
    a->sh = v[1];
    a->sw = v[2];
    const char *s;
    size_t len;
    if (!vg_op_attr_string(op, "padding", &s, &len)) return vg_status_set(st, VG_INVALID_ARGUMENT, "missing attr 'padding'");
    if (len == 4 && memcmp(s, "SAME", 4) == 0) a->same = true;
    else if (len == 5 && memcmp(s, "VALID", 5) == 0) a->same = false;
    else return vg_status_set(st, VG_INVALID_ARGUMENT, "padding must be SAME or VALID, got '%.*s'", (int)len, s);
    if (vg_op_attr_string(op, "data_format", &s, &len) && !(len == 4 && memcmp(s, "NHWC", 4) == 0))
        return vg_status_set(st, VG_UNIMPLEMENTED, "%s: data_format %.*s is not supported (CPU: NHWC only)",
                             vg_op_type(op), (int)len, s);
    if (vg_op_attr_int_list(op, "dilations", &v, &n))
        for (int i = 0; i < n; i++)
            if (v[i] != 1) return vg_status_set(st, VG_UNIMPLEMENTED, "%s: dilations other than 1 are not supported", vg_op_type(op));
    return VG_OK;
}

static int64_t out_size(int64_t in, int64_t k, int64_t s, bool same, int64_t *pad) {
    *pad = 0;
    if (in < 0 || k < 0) return -1;
    if (same) {
        int64_t o = (in + s - 1) / s, total = (o - 1) * s + k - in;
        *pad = total > 0 ? total / 2 : 0;
        return o;
    }
    return in >= k ? (in - k + s) / s : -2;
}

/* Shape: which inputs are the input / filter shapes (given as tensors for backprops). */
typedef enum { FWD, BP_INPUT, BP_FILTER } dw_kind;

static bool shape_of_input(vg_op *op, int i, int64_t d[4]) {
    const vg_tensor *t = vg__op_const_input(op, i);
    if (t) {
        if (vg_tensor_ndims(t) != 1 || vg_tensor_dim(t, 0) != 4) return false;
        for (int k = 0; k < 4; k++)
            d[k] = vg_tensor_dtype(t) == VG_INT32 ? ((const int32_t *)vg_tensor_data(t))[k] : ((const int64_t *)vg_tensor_data(t))[k];
        return true;
    }
    vg_output in = vg_op_input(op, i);
    if (in.op && strcmp(vg_op_type(in.op), "Shape") == 0) {
        vg_shape s = vg_output_shape(vg_op_input(in.op, 0));
        if (s.ndims == 4) {
            memcpy(d, s.dims, sizeof(int64_t) * 4);
            return true;
        }
    }
    for (int k = 0; k < 4; k++) d[k] = -1;
    return true;
}

static vg_code dw_shape(vg_op *op, dw_kind kind, vg_status *st) {
    dw_attrs a;
    if (get_attrs(op, &a, st)) return st->code;
    int ri = kind == BP_FILTER ? 0 : kind == BP_INPUT ? 1 : 0; /* a real-valued input */
    vg_dtype dt = vg__op_input_dtype(op, kind == FWD ? 0 : ri);
    if (dt != VG_FLOAT && dt != VG_DOUBLE)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: dtype %s is not supported (float double)", vg_op_type(op),
                             vg_dtype_name(dt));
    int64_t xd[4], fd[4];
    vg_shape s;
    if (kind == BP_INPUT) {
        if (!shape_of_input(op, 0, xd)) return vg_status_set(st, VG_INVALID_ARGUMENT, "input_sizes must be a 4-element vector");
    } else {
        s = vg__op_input_shape(op, 0);
        if (s.ndims >= 0 && s.ndims != 4)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: input must be 4-dimensional, got rank %d", vg_op_type(op), s.ndims);
        for (int k = 0; k < 4; k++) xd[k] = s.ndims == 4 ? s.dims[k] : -1;
    }
    if (kind == BP_FILTER) {
        if (!shape_of_input(op, 1, fd)) return vg_status_set(st, VG_INVALID_ARGUMENT, "filter_sizes must be a 4-element vector");
    } else {
        s = vg__op_input_shape(op, 1);
        if (s.ndims >= 0 && s.ndims != 4)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: filter must be 4-dimensional, got rank %d", vg_op_type(op), s.ndims);
        for (int k = 0; k < 4; k++) fd[k] = s.ndims == 4 ? s.dims[k] : -1;
    }
    if (xd[3] >= 0 && fd[2] >= 0 && xd[3] != fd[2])
        return vg_status_set(st, VG_INVALID_ARGUMENT, "input and filter must have the same depth: %lld vs %lld",
                             (long long)xd[3], (long long)fd[2]);
    vg__op_set_default_attr_type(op, "T", dt);
    vg__op_set_default_attr_string(op, "data_format", "NHWC");
    vg__op_set_num_outputs(op, 1);
    if (kind == FWD) {
        int64_t p, o[4] = {xd[0], out_size(xd[1], fd[0], a.sh, a.same, &p), out_size(xd[2], fd[1], a.sw, a.same, &p),
                           fd[2] >= 0 && fd[3] >= 0 ? fd[2] * fd[3] : -1};
        if (o[1] == -2 || o[2] == -2)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: the filter is larger than the input with VALID padding",
                                 vg_op_type(op));
        vg__op_set_output(op, 0, dt, vg_shape_make(o, 4));
    } else {
        vg__op_set_output(op, 0, dt, vg_shape_make(kind == BP_INPUT ? xd : fd, 4));
    }
    return VG_OK;
}
static vg_code shape_dw(vg_op *op, vg_status *st) { return dw_shape(op, FWD, st); }
static vg_code shape_dw_bi(vg_op *op, vg_status *st) { return dw_shape(op, BP_INPUT, st); }
static vg_code shape_dw_bf(vg_op *op, vg_status *st) { return dw_shape(op, BP_FILTER, st); }

static double at(const vg_tensor *t, int64_t i) {
    return vg_tensor_dtype(t) == VG_FLOAT ? ((const float *)vg_tensor_data(t))[i] : ((const double *)vg_tensor_data(t))[i];
}
static void add_at(vg_tensor *t, int64_t i, double v) {
    if (vg_tensor_dtype(t) == VG_FLOAT) ((float *)vg_tensor_data(t))[i] += (float)v;
    else ((double *)vg_tensor_data(t))[i] += v;
}

typedef struct geom {
    int64_t n, h, w, c, kh, kw, m, oh, ow, pt, pl;
} geom;

static vg_code make_geom(vg__kctx *ctx, const dw_attrs *a, const int64_t xd[4], const int64_t fd[4], geom *g) {
    vg_status *st = vg__kctx_status(ctx);
    if (xd[3] != fd[2])
        return vg_status_set(st, VG_INVALID_ARGUMENT, "input and filter must have the same depth: %lld vs %lld",
                             (long long)xd[3], (long long)fd[2]);
    for (int k = 0; k < 4; k++)
        if (xd[k] < 0 || fd[k] < 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "negative dimension");
    g->n = xd[0], g->h = xd[1], g->w = xd[2], g->c = xd[3];
    g->kh = fd[0], g->kw = fd[1], g->m = fd[3];
    g->oh = out_size(g->h, g->kh, a->sh, a->same, &g->pt);
    g->ow = out_size(g->w, g->kw, a->sw, a->same, &g->pl);
    if (g->oh < 0 || g->ow < 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "the filter is larger than the input with VALID padding");
    return VG_OK;
}

/* mode 0: out += x*f; 1: dx += dy*f; 2: df += dy*x */
static void dw_loop(const geom *g, const dw_attrs *a, int mode, const vg_tensor *x, const vg_tensor *f,
                    const vg_tensor *dy, vg_tensor *o) {
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t oy = 0; oy < g->oh; oy++)
            for (int64_t ox = 0; ox < g->ow; ox++)
                for (int64_t ky = 0; ky < g->kh; ky++) {
                    int64_t iy = oy * a->sh + ky - g->pt;
                    if (iy < 0 || iy >= g->h) continue;
                    for (int64_t kx = 0; kx < g->kw; kx++) {
                        int64_t ix = ox * a->sw + kx - g->pl;
                        if (ix < 0 || ix >= g->w) continue;
                        for (int64_t c = 0; c < g->c; c++) {
                            int64_t xi = ((n * g->h + iy) * g->w + ix) * g->c + c;
                            for (int64_t m = 0; m < g->m; m++) {
                                int64_t fi = ((ky * g->kw + kx) * g->c + c) * g->m + m;
                                int64_t oi = ((n * g->oh + oy) * g->ow + ox) * g->c * g->m + c * g->m + m;
                                if (mode == 0) add_at(o, oi, at(x, xi) * at(f, fi));
                                else if (mode == 1) add_at(o, xi, at(dy, oi) * at(f, fi));
                                else add_at(o, fi, at(dy, oi) * at(x, xi));
                            }
                        }
                    }
                }
}

static vg_code read_sizes(vg__kctx *ctx, int i, int64_t d[4]) {
    const vg_tensor *t = vg__kctx_input(ctx, i);
    if (vg_tensor_ndims(t) != 1 || vg_tensor_dim(t, 0) != 4 ||
        (vg_tensor_dtype(t) != VG_INT32 && vg_tensor_dtype(t) != VG_INT64))
        return vg_status_set(vg__kctx_status(ctx), VG_INVALID_ARGUMENT, "sizes must be a 4-element int32/int64 vector");
    for (int k = 0; k < 4; k++)
        d[k] = vg_tensor_dtype(t) == VG_INT32 ? ((const int32_t *)vg_tensor_data(t))[k] : ((const int64_t *)vg_tensor_data(t))[k];
    return VG_OK;
}

static vg_code check4(vg__kctx *ctx, const vg_tensor *t, const char *what) {
    if (vg_tensor_ndims(t) != 4)
        return vg_status_set(vg__kctx_status(ctx), VG_INVALID_ARGUMENT, "%s must be 4-dimensional", what);
    return VG_OK;
}

static vg_code dw_run(vg__kctx *ctx, dw_kind kind) {
    dw_attrs a;
    vg_status *st = vg__kctx_status(ctx);
    if (get_attrs(vg__kctx_op(ctx), &a, st)) return st->code;
    int64_t xd[4], fd[4];
    const vg_tensor *x = NULL, *f = NULL, *dy = NULL;
    vg_code c;
    if (kind == FWD) {
        x = vg__kctx_input(ctx, 0), f = vg__kctx_input(ctx, 1);
        if ((c = check4(ctx, x, "input")) || (c = check4(ctx, f, "filter"))) return c;
        memcpy(xd, vg_tensor_dims(x), sizeof xd);
        memcpy(fd, vg_tensor_dims(f), sizeof fd);
    } else if (kind == BP_INPUT) {
        if ((c = read_sizes(ctx, 0, xd))) return c;
        f = vg__kctx_input(ctx, 1), dy = vg__kctx_input(ctx, 2);
        if ((c = check4(ctx, f, "filter")) || (c = check4(ctx, dy, "out_backprop"))) return c;
        memcpy(fd, vg_tensor_dims(f), sizeof fd);
    } else {
        x = vg__kctx_input(ctx, 0), dy = vg__kctx_input(ctx, 2);
        if ((c = check4(ctx, x, "input")) || (c = check4(ctx, dy, "out_backprop"))) return c;
        if ((c = read_sizes(ctx, 1, fd))) return c;
        memcpy(xd, vg_tensor_dims(x), sizeof xd);
    }
    geom g = {0}; /* filled by the geometry check */
    if ((c = make_geom(ctx, &a, xd, fd, &g))) return c;
    if (dy) {
        const int64_t *dd = vg_tensor_dims(dy);
        if (dd[0] != g.n || dd[1] != g.oh || dd[2] != g.ow || dd[3] != g.c * g.m)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "out_backprop has shape [%lld,%lld,%lld,%lld], expected [%lld,%lld,%lld,%lld]",
                                 (long long)dd[0], (long long)dd[1], (long long)dd[2], (long long)dd[3], (long long)g.n,
                                 (long long)g.oh, (long long)g.ow, (long long)(g.c * g.m));
    }
    vg_dtype dt = vg_tensor_dtype(f ? f : x);
    int64_t od[4] = {g.n, g.oh, g.ow, g.c * g.m};
    vg_tensor *o;
    if ((c = vg__kctx_alloc_output(ctx, 0, dt, kind == FWD ? od : kind == BP_INPUT ? xd : fd, 4, &o))) return c;
    memset(vg_tensor_data(o), 0, vg_tensor_nbytes(o));
    dw_loop(&g, &a, kind == FWD ? 0 : kind == BP_INPUT ? 1 : 2, x, f, dy, o);
    return VG_OK;
}
static vg_code kernel_dw(vg__kctx *ctx) { return dw_run(ctx, FWD); }
static vg_code kernel_dw_bi(vg__kctx *ctx) { return dw_run(ctx, BP_INPUT); }
static vg_code kernel_dw_bf(vg__kctx *ctx) { return dw_run(ctx, BP_FILTER); }

static vg_op *build(vg_graph *g, const char *type, vg_output a, vg_output b, vg_output c, bool three,
                    const int64_t strides[4], const char *padding, const char *name) {
    vg_op_builder *bd = vg_op_builder_new(g, type, name ? name : type);
    if (!bd) return NULL;
    vg_op_builder_add_input(bd, a);
    vg_op_builder_add_input(bd, b);
    if (three) vg_op_builder_add_input(bd, c);
    vg_op_builder_set_attr_int_list(bd, "strides", strides, 4);
    vg_op_builder_set_attr_string(bd, "padding", padding ? padding : "", padding ? strlen(padding) : 0);
    vg_op_builder_set_attr_string(bd, "data_format", "NHWC", 4);
    int64_t ones[4] = {1, 1, 1, 1};
    vg_op_builder_set_attr_int_list(bd, "dilations", ones, 4);
    return vg_op_builder_finish(bd);
}

static void strides_padding(const vg_op *op, int64_t s[4], const char **pad) {
    const int64_t *v;
    int n;
    for (int i = 0; i < 4; i++) s[i] = 1;
    if (vg_op_attr_int_list(op, "strides", &v, &n) && n == 4) memcpy(s, v, sizeof(int64_t) * 4);
    const char *p;
    size_t len;
    *pad = vg_op_attr_string(op, "padding", &p, &len) && len == 4 ? "SAME" : "VALID";
}

static vg_code grad_dw(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    int64_t s[4];
    const char *pad;
    strides_padding(op, s, &pad);
    vg_output x = vg_op_input(op, 0), f = vg_op_input(op, 1);
    dx[0] = vg_out(build(g, "DepthwiseConv2dNativeBackpropInput", vg_shape_op(g, x, VG_INT32, "Shape"), f, dy[0], true,
                         s, pad, NULL), 0);
    dx[1] = vg_out(build(g, "DepthwiseConv2dNativeBackpropFilter", x, vg_shape_op(g, f, VG_INT32, "Shape_1"), dy[0], true,
                         s, pad, NULL), 0);
    return vg_graph_status(g, NULL);
}

vg_output vg_depthwise_conv2d_native(vg_graph *g, vg_output x, vg_output filter, const int64_t strides[4],
                                     const char *padding, const char *name) {
    return vg_out(build(g, "DepthwiseConv2dNative", x, filter, x, false, strides, padding, name), 0);
}

const vg__op_def vg__ops_nn_depthwise[] = {
    {"DepthwiseConv2dNative", 2, 2, 0, 0, shape_dw, kernel_dw, grad_dw},
    {"DepthwiseConv2dNativeBackpropInput", 3, 3, 0, 0, shape_dw_bi, kernel_dw_bi, NULL},
    {"DepthwiseConv2dNativeBackpropFilter", 3, 3, 0, 0, shape_dw_bf, kernel_dw_bf, NULL},
    {0},
};
