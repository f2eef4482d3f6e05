/*
 * image_ops.c - the kernels behind tf.image (TF 1.15's resize_bilinear_op.cc,
 * resize_nearest_neighbor_op.cc, adjust_contrast_op.cc, adjust_saturation_op.cc,
 * adjust_hue_op.cc, colorspace_op.cc), NHWC:
 *
 *   ResizeBilinear(images, size) align_corners, half_pixel_centers -> float
 *   ResizeBilinearGrad(grads, original_image)                      -> original's dtype
 *   ResizeNearestNeighbor(images, size)                            -> images' dtype
 *   ResizeNearestNeighborGrad(grads, size)
 *   AdjustContrastv2(images, contrast_factor)   (x - mean_hw) * f + mean_hw
 *   AdjustSaturation(images, scale), AdjustHue(images, delta)  through HSV
 *   RGBToHSV(images), HSVToRGB(images)
 *
 * Interpolation as TF: scale = in/out, or (in-1)/(out-1) with align_corners; source
 * coordinate y*scale (legacy) or (y+0.5)*scale-0.5 (half_pixel_centers; nearest
 * neighbour uses (y+0.5)*scale); bilinear takes floor/ceil clamped to the image and
 * lerps; nearest rounds (align_corners) or floors. Gradients as image_grad.py: the two
 * resize ops through their *Grad ops (none for the size input); the colour ops have none.
 * The public tf.image composites (flips, crops, pads, random_*, per-image
 * standardization, convert_image_dtype) are in src/train/image.c.
 */
#include "kernels/ew_internal.h"
#include "vigil/image_ops.h"
#include <math.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* helpers */

static double get(const vg_tensor *t, int64_t i) {
    const void *d = vg_tensor_data(t);
    switch (vg_tensor_dtype(t)) {
    case VG_FLOAT: return ((const float *)d)[i];
    case VG_DOUBLE: return ((const double *)d)[i];
    case VG_INT32: return ((const int32_t *)d)[i];
    case VG_INT64: return (double)((const int64_t *)d)[i];
    case VG_UINT8: return ((const uint8_t *)d)[i];
    default: return 0;
    }
}

static bool resize_dtype_ok(vg_dtype dt) {
    return dt == VG_FLOAT || dt == VG_DOUBLE || dt == VG_INT32 || dt == VG_INT64 || dt == VG_UINT8;
}

static void resize_attrs(const vg_op *op, bool *align, bool *hpc) {
    *align = false, *hpc = false;
    vg_op_attr_bool(op, "align_corners", align);
    vg_op_attr_bool(op, "half_pixel_centers", hpc);
}

static double resize_scale(int64_t in, int64_t out, bool align) {
    return (align && out > 1) ? (double)(in - 1) / (double)(out - 1) : (double)in / (double)out;
}

/* Output dims of a resize from its size input (known at build time when constant). */
static vg_code resize_shape(vg_op *op, bool float_out, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, 0);
    if (!resize_dtype_ok(dt))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: images has dtype %s, which is not supported", vg_op_type(op),
                             vg_dtype_name(dt));
    if (vg__op_input_dtype(op, 1) != VG_INT32)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: size must be int32, got %s", vg_op_type(op),
                             vg_dtype_name(vg__op_input_dtype(op, 1)));
    bool align, hpc;
    resize_attrs(op, &align, &hpc);
    if (align && hpc)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "If half_pixel_centers is True, align_corners must be False.");
    vg_shape in = vg__op_input_shape(op, 0);
    if (in.ndims >= 0 && in.ndims != 4)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: input must be 4-dimensional, got rank %d", vg_op_type(op), in.ndims);
    vg_shape ss = vg__op_input_shape(op, 1);
    if (ss.ndims >= 0 && (ss.ndims != 1 || (ss.dims[0] >= 0 && ss.dims[0] != 2)))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: size must be a 1-D tensor of 2 elements", vg_op_type(op));
    int64_t dims[4] = {in.ndims == 4 ? in.dims[0] : -1, -1, -1, in.ndims == 4 ? in.dims[3] : -1};
    const vg_tensor *sz = vg__op_const_input(op, 1);
    if (sz && vg_tensor_num_elements(sz) == 2) {
        const int32_t *s = vg_tensor_data(sz);
        if (s[0] <= 0 || s[1] <= 0)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: output dimensions must be positive, got [%d, %d]", vg_op_type(op),
                                 s[0], s[1]);
        dims[1] = s[0], dims[2] = s[1];
    }
    vg__op_set_default_attr_type(op, "T", dt);
    vg__op_set_default_attr_bool(op, "align_corners", false);
    vg__op_set_default_attr_bool(op, "half_pixel_centers", false);
    vg__op_set_num_outputs(op, 1);
    vg__op_set_output(op, 0, float_out ? VG_FLOAT : dt, vg_shape_make(dims, 4));
    return VG_OK;
}
static vg_code shape_resize_bilinear(vg_op *op, vg_status *st) { return resize_shape(op, true, st); }
static vg_code shape_resize_nn(vg_op *op, vg_status *st) { return resize_shape(op, false, st); }

/* Validates images (4-D) and size (2 positive int32) at run time. */
static vg_code resize_check(vg__kctx *ctx, int64_t *oh, int64_t *ow) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *x = vg__kctx_input(ctx, 0), *sz = vg__kctx_input(ctx, 1);
    if (vg_tensor_ndims(x) != 4)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "input must be 4-dimensional, got rank %d", vg_tensor_ndims(x));
    if (vg_tensor_ndims(sz) != 1 || vg_tensor_dim(sz, 0) != 2)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "shape_t must be 1-dimensional with two elements");
    const int32_t *s = vg_tensor_data(sz);
    if (s[0] <= 0 || s[1] <= 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "output dimensions must be positive, got [%d, %d]", s[0], s[1]);
    if (vg_tensor_dim(x, 1) <= 0 || vg_tensor_dim(x, 2) <= 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "input image must be of non-zero size");
    *oh = s[0], *ow = s[1];
    return VG_OK;
}

typedef struct interp {
    int64_t lo, hi;
    double lerp;
} interp;

static void bilinear_weights(int64_t out, int64_t in, double scale, bool hpc, interp *w) {
    for (int64_t i = 0; i < out; i++) {
        float s = hpc ? ((float)i + 0.5f) * (float)scale - 0.5f : (float)i * (float)scale;
        float f = floorf(s);
        w[i].lo = f > 0 ? (int64_t)f : 0;
        int64_t c = (int64_t)ceilf(s);
        w[i].hi = c < in - 1 ? c : in - 1;
        w[i].lerp = s - f;
    }
}

static int64_t nn_index(int64_t i, double scale, bool align, bool hpc, int64_t in) {
    float s = hpc ? ((float)i + 0.5f) * (float)scale : (float)i * (float)scale;
    int64_t v = (int64_t)(align ? roundf(s) : floorf(s));
    if (v > in - 1) v = in - 1;
    if (hpc && v < 0) v = 0;
    return v;
}

/* ------------------------------------------------------------------------ */
/* ResizeBilinear */

static vg_code kernel_resize_bilinear(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *x = vg__kctx_input(ctx, 0);
    int64_t oh, ow;
    if (resize_check(ctx, &oh, &ow)) return st->code;
    bool align, hpc;
    resize_attrs(vg__kctx_op(ctx), &align, &hpc);
    int64_t b = vg_tensor_dim(x, 0), h = vg_tensor_dim(x, 1), w = vg_tensor_dim(x, 2), c = vg_tensor_dim(x, 3);
    int64_t dims[4] = {b, oh, ow, c};
    vg_tensor *o;
    if (vg__kctx_alloc_output(ctx, 0, VG_FLOAT, dims, 4, &o)) return st->code;
    interp *ys = vg__malloc(sizeof(interp) * (size_t)(oh + ow));
    if (!ys) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "ResizeBilinear: out of memory");
    interp *xs = ys + oh;
    bilinear_weights(oh, h, resize_scale(h, oh, align), hpc, ys);
    bilinear_weights(ow, w, resize_scale(w, ow, align), hpc, xs);
    float *out = vg_tensor_data(o);
    for (int64_t n = 0; n < b; n++)
        for (int64_t y = 0; y < oh; y++)
            for (int64_t xx = 0; xx < ow; xx++)
                for (int64_t k = 0; k < c; k++) {
                    int64_t base = n * h * w * c;
                    double tl = get(x, base + (ys[y].lo * w + xs[xx].lo) * c + k);
                    double tr = get(x, base + (ys[y].lo * w + xs[xx].hi) * c + k);
                    double bl = get(x, base + (ys[y].hi * w + xs[xx].lo) * c + k);
                    double br = get(x, base + (ys[y].hi * w + xs[xx].hi) * c + k);
                    float top = (float)tl + ((float)tr - (float)tl) * (float)xs[xx].lerp;
                    float bot = (float)bl + ((float)br - (float)bl) * (float)xs[xx].lerp;
                    out[((n * oh + y) * ow + xx) * c + k] = top + (bot - top) * (float)ys[y].lerp;
                }
    vg__free(ys);
    return VG_OK;
}

/* ResizeBilinearGrad(grads float [b, oh, ow, c], original_image [b, h, w, c]) */
static vg_code shape_resize_bilinear_grad(vg_op *op, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, 1);
    if (vg__op_input_dtype(op, 0) != VG_FLOAT || (dt != VG_FLOAT && dt != VG_DOUBLE))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "ResizeBilinearGrad: grads must be float and original_image float or double");
    bool align, hpc;
    resize_attrs(op, &align, &hpc);
    if (align && hpc)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "If half_pixel_centers is True, align_corners must be False.");
    vg__op_set_default_attr_type(op, "T", dt);
    vg__op_set_num_outputs(op, 1);
    vg__op_set_output(op, 0, dt, vg__op_input_shape(op, 1));
    return VG_OK;
}

static vg_code kernel_resize_bilinear_grad(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *g = vg__kctx_input(ctx, 0), *orig = vg__kctx_input(ctx, 1);
    if (vg_tensor_ndims(g) != 4 || vg_tensor_ndims(orig) != 4)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "input_grad and original_image must be 4-dimensional");
    int64_t b = vg_tensor_dim(orig, 0), h = vg_tensor_dim(orig, 1), w = vg_tensor_dim(orig, 2), c = vg_tensor_dim(orig, 3);
    int64_t oh = vg_tensor_dim(g, 1), ow = vg_tensor_dim(g, 2);
    if (vg_tensor_dim(g, 0) != b || vg_tensor_dim(g, 3) != c)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "input_grad and original_image must agree in batch and depth");
    if (h <= 0 || w <= 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "original image must be of non-zero size");
    bool align, hpc;
    resize_attrs(vg__kctx_op(ctx), &align, &hpc);
    vg_tensor *o;
    if (vg__kctx_alloc_output(ctx, 0, vg_tensor_dtype(orig), vg_tensor_dims(orig), 4, &o)) return st->code;
    int64_t nout = vg_tensor_num_elements(o);
    double *acc = vg__malloc(sizeof(double) * (size_t)(nout ? nout : 1));
    interp *ys = vg__malloc(sizeof(interp) * (size_t)(oh + ow + 1));
    if (!acc || !ys) {
        vg__free(acc), vg__free(ys);
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "ResizeBilinearGrad: out of memory");
    }
    memset(acc, 0, sizeof(double) * (size_t)nout);
    interp *xs = ys + oh;
    bilinear_weights(oh, h, resize_scale(h, oh, align), hpc, ys);
    bilinear_weights(ow, w, resize_scale(w, ow, align), hpc, xs);
    const float *gd = vg_tensor_data(g);
    for (int64_t n = 0; n < b; n++)
        for (int64_t y = 0; y < oh; y++) {
            double yl = ys[y].lerp, iy = 1.0 - yl;
            for (int64_t xx = 0; xx < ow; xx++) {
                double xl = xs[xx].lerp, ix = 1.0 - xl;
                for (int64_t k = 0; k < c; k++) {
                    double gv = gd[((n * oh + y) * ow + xx) * c + k];
                    int64_t base = n * h * w * c + k;
                    acc[base + (ys[y].lo * w + xs[xx].lo) * c] += gv * iy * ix;
                    acc[base + (ys[y].lo * w + xs[xx].hi) * c] += gv * iy * xl;
                    acc[base + (ys[y].hi * w + xs[xx].lo) * c] += gv * yl * ix;
                    acc[base + (ys[y].hi * w + xs[xx].hi) * c] += gv * yl * xl;
                }
            }
        }
    for (int64_t i = 0; i < nout; i++) {
        if (vg_tensor_dtype(o) == VG_FLOAT) ((float *)vg_tensor_data(o))[i] = (float)acc[i];
        else ((double *)vg_tensor_data(o))[i] = acc[i];
    }
    vg__free(acc), vg__free(ys);
    return VG_OK;
}

static void copy_resize_attrs(vg_op_builder *b, const vg_op *op) {
    bool align, hpc;
    resize_attrs(op, &align, &hpc);
    vg_op_builder_set_attr_bool(b, "align_corners", align);
    vg_op_builder_set_attr_bool(b, "half_pixel_centers", hpc);
}

static vg_code grad_resize_bilinear(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output x = vg_op_input(op, 0);
    vg_dtype dt = vg_output_dtype(x);
    if (dt == VG_FLOAT || dt == VG_DOUBLE) { /* image_grad.py: no gradient for integer images */
        vg_op_builder *b = vg_op_builder_new(g, "ResizeBilinearGrad", "ResizeBilinearGrad");
        if (!b) return vg_graph_status(g, NULL);
        vg_op_builder_add_input(b, dy[0]);
        vg_op_builder_add_input(b, x);
        copy_resize_attrs(b, op);
        dx[0] = vg_out(vg_op_builder_finish(b), 0);
    }
    return vg_graph_status(g, NULL);
}

/* ------------------------------------------------------------------------ */
/* ResizeNearestNeighbor */

static vg_code kernel_resize_nn(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *x = vg__kctx_input(ctx, 0);
    int64_t oh, ow;
    if (resize_check(ctx, &oh, &ow)) return st->code;
    bool align, hpc;
    resize_attrs(vg__kctx_op(ctx), &align, &hpc);
    int64_t b = vg_tensor_dim(x, 0), h = vg_tensor_dim(x, 1), w = vg_tensor_dim(x, 2), c = vg_tensor_dim(x, 3);
    int64_t dims[4] = {b, oh, ow, c};
    vg_tensor *o;
    if (vg__kctx_alloc_output(ctx, 0, vg_tensor_dtype(x), dims, 4, &o)) return st->code;
    size_t esz = vg_dtype_size(vg_tensor_dtype(x));
    double hs = resize_scale(h, oh, align), ws = resize_scale(w, ow, align);
    const char *src = vg_tensor_data(x);
    char *dst = vg_tensor_data(o);
    for (int64_t n = 0; n < b; n++)
        for (int64_t y = 0; y < oh; y++) {
            int64_t iy = nn_index(y, hs, align, hpc, h);
            for (int64_t xx = 0; xx < ow; xx++) {
                int64_t ix = nn_index(xx, ws, align, hpc, w);
                memcpy(dst + (size_t)(((n * oh + y) * ow + xx) * c) * esz, src + (size_t)(((n * h + iy) * w + ix) * c) * esz,
                       (size_t)c * esz);
            }
        }
    return VG_OK;
}

/* ResizeNearestNeighborGrad(grads [b, gh, gw, c], size = original [h, w]) */
static vg_code shape_resize_nn_grad(vg_op *op, vg_status *st) { return resize_shape(op, false, st); }

static vg_code kernel_resize_nn_grad(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *g = vg__kctx_input(ctx, 0);
    int64_t h, w;
    if (resize_check(ctx, &h, &w)) return st->code;
    bool align, hpc;
    resize_attrs(vg__kctx_op(ctx), &align, &hpc);
    vg_dtype dt = vg_tensor_dtype(g);
    if (dt != VG_FLOAT && dt != VG_DOUBLE)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "ResizeNearestNeighborGrad: grads must be float or double");
    int64_t b = vg_tensor_dim(g, 0), gh = vg_tensor_dim(g, 1), gw = vg_tensor_dim(g, 2), c = vg_tensor_dim(g, 3);
    int64_t dims[4] = {b, h, w, c};
    vg_tensor *o;
    if (vg__kctx_alloc_output(ctx, 0, dt, dims, 4, &o)) return st->code;
    memset(vg_tensor_data(o), 0, vg_tensor_nbytes(o));
    double hs = resize_scale(h, gh, align), ws = resize_scale(w, gw, align);
    for (int64_t n = 0; n < b; n++)
        for (int64_t y = 0; y < gh; y++) {
            int64_t iy = nn_index(y, hs, align, hpc, h);
            for (int64_t xx = 0; xx < gw; xx++) {
                int64_t ix = nn_index(xx, ws, align, hpc, w);
                for (int64_t k = 0; k < c; k++) {
                    int64_t si = ((n * gh + y) * gw + xx) * c + k, di = ((n * h + iy) * w + ix) * c + k;
                    if (dt == VG_FLOAT) ((float *)vg_tensor_data(o))[di] += ((const float *)vg_tensor_data(g))[si];
                    else ((double *)vg_tensor_data(o))[di] += ((const double *)vg_tensor_data(g))[si];
                }
            }
        }
    return VG_OK;
}

static vg_code grad_resize_nn(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output x = vg_op_input(op, 0);
    vg_dtype dt = vg_output_dtype(x);
    if (dt != VG_FLOAT && dt != VG_DOUBLE) return vg_graph_status(g, NULL);
    /* image_grad.py: the original size is shape(image)[1:3] */
    vg_shape s = vg_output_shape(x);
    vg_output size;
    if (s.ndims == 4 && s.dims[1] >= 0 && s.dims[2] >= 0) {
        int32_t hw[2] = {(int32_t)s.dims[1], (int32_t)s.dims[2]};
        size = vg_const_i32_vec(g, hw, 2, "size");
    } else {
        size = vg_slice_c(g, vg_shape_op(g, x, VG_INT32, "Shape"), (const int64_t[]){1}, (const int64_t[]){2}, 1, "Slice");
    }
    vg_op_builder *b = vg_op_builder_new(g, "ResizeNearestNeighborGrad", "ResizeNearestNeighborGrad");
    if (!b) return vg_graph_status(g, NULL);
    vg_op_builder_add_input(b, dy[0]);
    vg_op_builder_add_input(b, size);
    copy_resize_attrs(b, op);
    dx[0] = vg_out(vg_op_builder_finish(b), 0);
    return vg_graph_status(g, NULL);
}

/* ------------------------------------------------------------------------ */
/* colour: AdjustContrastv2, AdjustSaturation, AdjustHue, RGBToHSV, HSVToRGB */

static vg_code shape_color(vg_op *op, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, 0);
    if (dt != VG_FLOAT && dt != VG_DOUBLE)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: images must be float or double, got %s", vg_op_type(op),
                             vg_dtype_name(dt));
    vg_shape s = vg__op_input_shape(op, 0);
    bool contrast = strcmp(vg_op_type(op), "AdjustContrastv2") == 0;
    bool rgb = !contrast;
    if (s.ndims >= 0 && s.ndims < (contrast ? 3 : 1))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: input must be at least %s, got rank %d", vg_op_type(op),
                             contrast ? "3-D" : "1-D", s.ndims);
    if (rgb && s.ndims >= 1 && s.dims[s.ndims - 1] >= 0 && s.dims[s.ndims - 1] != 3)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: input must have 3 channels, got %lld", vg_op_type(op),
                             (long long)s.dims[s.ndims - 1]);
    if (vg_op_num_inputs(op) > 1 && vg__op_input_dtype(op, 1) != VG_FLOAT)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: the factor must be float, got %s", vg_op_type(op),
                             vg_dtype_name(vg__op_input_dtype(op, 1)));
    vg__op_set_default_attr_type(op, "T", dt);
    vg__op_set_num_outputs(op, 1);
    vg__op_set_output(op, 0, dt, s);
    return VG_OK;
}

static void put(vg_tensor *t, int64_t i, double v) {
    if (vg_tensor_dtype(t) == VG_FLOAT) ((float *)vg_tensor_data(t))[i] = (float)v;
    else ((double *)vg_tensor_data(t))[i] = v;
}

static vg_code color_begin(vg__kctx *ctx, int min_rank, bool rgb, float *factor, vg_tensor **o) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *x = vg__kctx_input(ctx, 0);
    int r = vg_tensor_ndims(x);
    if (r < min_rank)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "input must be at least %dD, got rank %d", min_rank, r);
    if (rgb && vg_tensor_dim(x, r - 1) != 3)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "input must have 3 channels but input only has %lld channels.",
                             (long long)vg_tensor_dim(x, r - 1));
    if (factor) {
        const vg_tensor *f = vg__kctx_input(ctx, 1);
        if (vg_tensor_num_elements(f) != 1 || vg_tensor_ndims(f) != 0)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "the factor must be scalar, got rank %d", vg_tensor_ndims(f));
        *factor = *(const float *)vg_tensor_data(f);
    }
    return vg__kctx_alloc_output(ctx, 0, vg_tensor_dtype(x), vg_tensor_dims(x), r, o);
}

static vg_code kernel_adjust_contrast(vg__kctx *ctx) {
    const vg_tensor *x = vg__kctx_input(ctx, 0);
    float f;
    vg_tensor *o;
    vg_code c = color_begin(ctx, 3, false, &f, &o);
    if (c != VG_OK) return c;
    int r = vg_tensor_ndims(x);
    int64_t ch = vg_tensor_dim(x, r - 1), hw = vg_tensor_dim(x, r - 2) * vg_tensor_dim(x, r - 3);
    int64_t per = hw * ch, nimg = per > 0 ? vg_tensor_num_elements(x) / per : 0;
    for (int64_t n = 0; n < nimg; n++)
        for (int64_t k = 0; k < ch; k++) {
            double s = 0;
            int64_t base = n * hw * ch + k;
            for (int64_t i = 0; i < hw; i++) s += get(x, base + i * ch);
            double mean = s / (double)hw;
            if (vg_tensor_dtype(x) == VG_FLOAT) {
                float m = (float)mean;
                for (int64_t i = 0; i < hw; i++) put(o, base + i * ch, ((float)get(x, base + i * ch) - m) * f + m);
            } else {
                for (int64_t i = 0; i < hw; i++) put(o, base + i * ch, (get(x, base + i * ch) - mean) * f + mean);
            }
        }
    return VG_OK;
}

static void rgb_to_hsv(double r, double g, double b, double *h, double *s, double *v) {
    double vv = fmax(r, fmax(g, b)), range = vv - fmin(r, fmin(g, b));
    *s = vv > 0 ? range / vv : 0;
    double norm = 1.0 / (6.0 * range), hh;
    if (range <= 0) hh = 0;
    else if (r == vv) hh = norm * (g - b);
    else if (g == vv) hh = norm * (b - r) + 2.0 / 6.0;
    else hh = norm * (r - g) + 4.0 / 6.0;
    if (hh < 0) hh += 1;
    *h = hh, *v = vv;
}

static void hsv_to_rgb(double h, double s, double v, double *r, double *g, double *b) {
    double c = s * v, m = v - c, dh = h * 6;
    int cat = (int)floor(dh);
    double fm = fmod(dh, 2.0);
    double x = c * (1 - fabs(fm - 1));
    double rr = 0, gg = 0, bb = 0;
    switch (cat) {
    case 0: rr = c, gg = x; break;
    case 1: rr = x, gg = c; break;
    case 2: gg = c, bb = x; break;
    case 3: gg = x, bb = c; break;
    case 4: rr = x, bb = c; break;
    case 5: rr = c, bb = x; break;
    default: break;
    }
    *r = rr + m, *g = gg + m, *b = bb + m;
}

enum { COL_SAT, COL_HUE, COL_TO_HSV, COL_TO_RGB };

static vg_code color_kernel(vg__kctx *ctx, int kind) {
    const vg_tensor *x = vg__kctx_input(ctx, 0);
    float f = 0;
    vg_tensor *o;
    vg_code c = color_begin(ctx, 1, true, (kind == COL_SAT || kind == COL_HUE) ? &f : NULL, &o);
    if (c != VG_OK) return c;
    int64_t n = vg_tensor_num_elements(x) / 3;
    for (int64_t i = 0; i < n; i++) {
        double a = get(x, 3 * i), b = get(x, 3 * i + 1), cc = get(x, 3 * i + 2), h, s, v;
        if (kind == COL_TO_RGB) {
            hsv_to_rgb(a, b, cc, &h, &s, &v);
        } else {
            rgb_to_hsv(a, b, cc, &h, &s, &v);
            if (kind == COL_SAT) {
                s = s * f;
                s = s < 0 ? 0 : s > 1 ? 1 : s;
            } else if (kind == COL_HUE) {
                h = fmod(h + f, 1.0);
                if (h < 0) h += 1.0;
            }
            if (kind != COL_TO_HSV) hsv_to_rgb(h, s, v, &h, &s, &v);
        }
        put(o, 3 * i, h), put(o, 3 * i + 1, s), put(o, 3 * i + 2, v);
    }
    return VG_OK;
}
static vg_code kernel_adjust_saturation(vg__kctx *ctx) { return color_kernel(ctx, COL_SAT); }
static vg_code kernel_adjust_hue(vg__kctx *ctx) { return color_kernel(ctx, COL_HUE); }
static vg_code kernel_rgb_to_hsv(vg__kctx *ctx) { return color_kernel(ctx, COL_TO_HSV); }
static vg_code kernel_hsv_to_rgb(vg__kctx *ctx) { return color_kernel(ctx, COL_TO_RGB); }

/* ------------------------------------------------------------------------ */
/* builders */

static vg_output resize_op(vg_graph *g, const char *type, vg_output images, vg_output size, bool align, bool hpc,
                           const char *name) {
    if (!g || !images.op || !size.op) return vg_out(NULL, 0);
    vg_op_builder *b = vg_op_builder_new(g, type, name ? name : type);
    if (!b) return vg_out(NULL, 0);
    vg_op_builder_add_input(b, images);
    vg_op_builder_add_input(b, size);
    vg_op_builder_set_attr_bool(b, "align_corners", align);
    vg_op_builder_set_attr_bool(b, "half_pixel_centers", hpc);
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_output vg_resize_bilinear(vg_graph *g, vg_output images, vg_output size, bool align_corners, bool half_pixel_centers,
                             const char *name) {
    return resize_op(g, "ResizeBilinear", images, size, align_corners, half_pixel_centers, name);
}

vg_output vg_resize_nearest_neighbor(vg_graph *g, vg_output images, vg_output size, bool align_corners,
                                     bool half_pixel_centers, const char *name) {
    return resize_op(g, "ResizeNearestNeighbor", images, size, align_corners, half_pixel_centers, name);
}

static vg_output color_op(vg_graph *g, const char *type, vg_output images, vg_output factor, const char *name) {
    if (!g || !images.op) return vg_out(NULL, 0);
    vg_op_builder *b = vg_op_builder_new(g, type, name ? name : type);
    if (!b) return vg_out(NULL, 0);
    vg_op_builder_add_input(b, images);
    if (factor.op) vg_op_builder_add_input(b, factor);
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_output vg_adjust_contrastv2(vg_graph *g, vg_output images, vg_output contrast_factor, const char *name) {
    if (!contrast_factor.op) return vg_out(NULL, 0);
    return color_op(g, "AdjustContrastv2", images, contrast_factor, name);
}
vg_output vg_adjust_saturation_op(vg_graph *g, vg_output images, vg_output scale, const char *name) {
    if (!scale.op) return vg_out(NULL, 0);
    return color_op(g, "AdjustSaturation", images, scale, name);
}
vg_output vg_adjust_hue_op(vg_graph *g, vg_output images, vg_output delta, const char *name) {
    if (!delta.op) return vg_out(NULL, 0);
    return color_op(g, "AdjustHue", images, delta, name);
}
vg_output vg_rgb_to_hsv(vg_graph *g, vg_output images, const char *name) {
    return color_op(g, "RGBToHSV", images, vg_out(NULL, 0), name);
}
vg_output vg_hsv_to_rgb(vg_graph *g, vg_output images, const char *name) {
    return color_op(g, "HSVToRGB", images, vg_out(NULL, 0), name);
}

const vg__op_def vg__ops_image[] = {
    {"ResizeBilinear", 2, 2, 0, 0, shape_resize_bilinear, kernel_resize_bilinear, grad_resize_bilinear},
    {"ResizeBilinearGrad", 2, 2, VG__OP_NOT_DIFFERENTIABLE, 0, shape_resize_bilinear_grad, kernel_resize_bilinear_grad, NULL},
    {"ResizeNearestNeighbor", 2, 2, 0, 0, shape_resize_nn, kernel_resize_nn, grad_resize_nn},
    {"ResizeNearestNeighborGrad", 2, 2, VG__OP_NOT_DIFFERENTIABLE, 0, shape_resize_nn_grad, kernel_resize_nn_grad, NULL},
    {"AdjustContrastv2", 2, 2, VG__OP_NOT_DIFFERENTIABLE, 0, shape_color, kernel_adjust_contrast, NULL},
    {"AdjustSaturation", 2, 2, VG__OP_NOT_DIFFERENTIABLE, 0, shape_color, kernel_adjust_saturation, NULL},
    {"AdjustHue", 2, 2, VG__OP_NOT_DIFFERENTIABLE, 0, shape_color, kernel_adjust_hue, NULL},
    {"RGBToHSV", 1, 1, VG__OP_NOT_DIFFERENTIABLE, 0, shape_color, kernel_rgb_to_hsv, NULL},
    {"HSVToRGB", 1, 1, VG__OP_NOT_DIFFERENTIABLE, 0, shape_color, kernel_hsv_to_rgb, NULL},
    {0},
};
