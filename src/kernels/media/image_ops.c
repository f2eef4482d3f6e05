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
 *   SampleDistortedBoundingBoxV2(image_size, bounding_boxes, min_object_covered) (stateful)
 *   DrawBoundingBoxes(images, boxes)
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
#include "kernels/math/random_internal.h"
#include "vigil/image_ops.h"
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* helpers */

static double get(const vg_tensor *t, int64_t i) { return vg__real_at(t, vg_tensor_dtype(t), i, 0); }

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
    return vg__op_set_single_output(op, float_out ? VG_FLOAT : dt, vg_shape_make(dims, 4));
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

/* A resize kernel's geometry: input 0 [b, h, w, c] to output [b, oh, ow, c]. */
typedef struct resize_geom {
    int64_t b, h, w, c, oh, ow;
    bool align, hpc;
} resize_geom;

/* The start of the resize kernels: checks the inputs (resize_check), reads the attributes
 * and allocates output 0 [b, oh, ow, c] of dtype dt into *o. */
static vg_code resize_begin(vg__kctx *ctx, vg_dtype dt, resize_geom *r, vg_tensor **o) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *x = vg__kctx_input(ctx, 0);
    if (resize_check(ctx, &r->oh, &r->ow)) return st->code;
    resize_attrs(vg__kctx_op(ctx), &r->align, &r->hpc);
    r->b = vg_tensor_dim(x, 0), r->h = vg_tensor_dim(x, 1), r->w = vg_tensor_dim(x, 2), r->c = vg_tensor_dim(x, 3);
    int64_t dims[4] = {r->b, r->oh, r->ow, r->c};
    if (vg__kctx_alloc_output(ctx, 0, dt, dims, 4, o)) return st->code;
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
    resize_geom r;
    vg_tensor *o;
    if (resize_begin(ctx, VG_FLOAT, &r, &o)) return st->code;
    int64_t b = r.b, h = r.h, w = r.w, c = r.c, oh = r.oh, ow = r.ow;
    bool align = r.align, hpc = r.hpc;
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
    return vg__op_set_t_output(op, dt, vg__op_input_shape(op, 1));
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
        vg_op_builder *b =
            vg__builder_with_inputs(g, "ResizeBilinearGrad", "ResizeBilinearGrad", NULL, (vg_output[]){dy[0], x}, 2);
        if (!b) return vg_graph_status(g, NULL);
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
    resize_geom r;
    vg_tensor *o;
    if (resize_begin(ctx, vg_tensor_dtype(x), &r, &o)) return st->code;
    int64_t b = r.b, h = r.h, w = r.w, c = r.c, oh = r.oh, ow = r.ow;
    bool align = r.align, hpc = r.hpc;
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
    vg_dtype dt = vg_tensor_dtype(g);
    resize_geom r; /* grads [b, gh, gw, c] to the original [b, h, w, c] */
    vg_tensor *o;
    if (resize_begin(ctx, dt, &r, &o)) return st->code;
    if (dt != VG_FLOAT && dt != VG_DOUBLE)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "ResizeNearestNeighborGrad: grads must be float or double");
    int64_t b = r.b, gh = r.h, gw = r.w, c = r.c, h = r.oh, w = r.ow;
    bool align = r.align, hpc = r.hpc;
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
    vg_op_builder *b = vg__builder_with_inputs(g, "ResizeNearestNeighborGrad", "ResizeNearestNeighborGrad", NULL,
                                               (vg_output[]){dy[0], size}, 2);
    if (!b) return vg_graph_status(g, NULL);
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
    return vg__op_set_t_output(op, dt, s);
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
/* SampleDistortedBoundingBoxV2 (TF 1.15's sample_distorted_bounding_box_op.cc) */

/* TF's Rectangle: [min_x, max_x) x [min_y, max_y) in pixels. */
typedef struct sdbb_rect { int min_x, min_y, max_x, max_y; } sdbb_rect;

static bool sdbb_empty(sdbb_rect r) { return r.min_x > r.max_x || r.min_y > r.max_y; }
static float sdbb_area(sdbb_rect r) { return (float)((r.max_x - r.min_x) * (r.max_y - r.min_y)); }
static sdbb_rect sdbb_intersect(sdbb_rect a, sdbb_rect b) {
    sdbb_rect r = {a.min_x > b.min_x ? a.min_x : b.min_x, a.min_y > b.min_y ? a.min_y : b.min_y,
                   a.max_x < b.max_x ? a.max_x : b.max_x, a.max_y < b.max_y ? a.max_y : b.max_y};
    if (sdbb_empty(r)) return (sdbb_rect){0, 0, 0, 0};
    return r;
}

/* The op's draws: 32-bit values of the per-(session, op) seed stream (random_internal.h),
 * used as SimplePhilox uses its Philox words (RandFloat: 23 mantissa bits in [0, 1);
 * Uniform(n): bits % n). */
typedef struct sdbb_rng { const vg__seed_stream *s; uint64_t pos; } sdbb_rng;
static uint32_t sdbb_bits(sdbb_rng *r) { return (uint32_t)(vg__splitmix64(r->s->key ^ vg__splitmix64(r->pos++)) >> 32); }
static float sdbb_rand_float(sdbb_rng *r) { return (float)(sdbb_bits(r) & 0x7fffffu) * (1.0f / 8388608.0f); }
static int sdbb_uniform(sdbb_rng *r, int n) { return (int)(sdbb_bits(r) % (uint32_t)n); }

/* GenerateRandomCrop: a crop of the aspect ratio with an area in [min, max] * the image
 * area, placed uniformly; false when the constraints cannot be met. */
static bool sdbb_random_crop(int ow, int oh, float min_rel, float max_rel, float aspect, sdbb_rng *rng, sdbb_rect *crop) {
    if (max_rel <= 0.0f || aspect <= 0.0f || ow <= 0 || oh <= 0 || min_rel > max_rel) return false;
    const float min_area = min_rel * (float)ow * (float)oh, max_area = max_rel * (float)ow * (float)oh;
    int height = (int)lrintf(sqrtf(min_area / aspect));
    int max_height = (int)lrintf(sqrtf(max_area / aspect));
    if (lrintf((float)max_height * aspect) > ow) {
        const float eps = 0.0000001f;
        max_height = (int)(((float)ow + 0.5f - eps) / aspect);
    }
    if (max_height > oh) max_height = oh;
    if (height >= max_height) height = max_height;
    if (height < max_height) height += sdbb_uniform(rng, max_height - height + 1);
    int width = (int)lrintf((float)height * aspect);
    float area = (float)(width * height);
    if (area < min_area) {
        height += 1;
        width = (int)lrintf((float)height * aspect);
        area = (float)(width * height);
    }
    if (area > max_area) {
        height -= 1;
        width = (int)lrintf((float)height * aspect);
        area = (float)(width * height);
    }
    if (area < min_area || area > max_area || width > ow || height > oh || width <= 0 || height <= 0) return false;
    int y = height < oh ? sdbb_uniform(rng, oh - height) : 0;
    int x = width < ow ? sdbb_uniform(rng, ow - width) : 0;
    *crop = (sdbb_rect){x, y, x + width, y + height};
    return true;
}

/* SatisfiesOverlapConstraints: some box of area >= 1 is covered at least min_covered. */
static bool sdbb_overlap_ok(sdbb_rect crop, float min_covered, const sdbb_rect *boxes, int64_t n) {
    if (sdbb_area(crop) < 1.0f) return false;
    for (int64_t i = 0; i < n; i++) {
        float a = sdbb_area(boxes[i]);
        if (a < 1.0f) continue;
        if (sdbb_area(sdbb_intersect(crop, boxes[i])) / a >= min_covered) return true;
    }
    return false;
}

static bool sdbb_int_dtype(vg_dtype dt) {
    return dt == VG_UINT8 || dt == VG_INT32 || dt == VG_INT64; /* vigil has no int8 / int16 */
}

/* The attrs as the kernel's constructor checks them (TF: at kernel creation, here at
 * graph building and again at run time). */
static vg_code sdbb_attrs(const vg_op *op, float ar[2], float area[2], int64_t *max_attempts, bool *use_image,
                          vg_status *st) {
    const float *v;
    int n;
    ar[0] = 0.75f, ar[1] = 1.33f, area[0] = 0.05f, area[1] = 1.0f, *max_attempts = 100, *use_image = false;
    if (vg_op_attr_float_list(op, "aspect_ratio_range", &v, &n)) {
        if (n != 2) return vg_status_set(st, VG_INVALID_ARGUMENT, "Aspect ratio range field must specify 2 dimensions");
        ar[0] = v[0], ar[1] = v[1];
    }
    if (!(ar[0] > 0 && ar[1] > 0))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Aspect ratio range must be non-negative: [%g, %g]", ar[0], ar[1]);
    if (vg_op_attr_float_list(op, "area_range", &v, &n)) {
        if (n != 2) return vg_status_set(st, VG_INVALID_ARGUMENT, "Area range field must specify 2 dimensions");
        area[0] = v[0], area[1] = v[1];
    }
    if (!(area[0] > 0 && area[1] > 0))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Area range must be non-negative: [%g, %g]", area[0], area[1]);
    if (!(area[0] <= 1 && area[1] <= 1))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Area range must be less then or equal to 1.0: [%g, %g]", area[0],
                             area[1]);
    vg_op_attr_int(op, "max_attempts", max_attempts);
    if (*max_attempts <= 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Max attempts must be non-negative: %lld", (long long)*max_attempts);
    vg_op_attr_bool(op, "use_image_if_no_bounding_boxes", use_image);
    return VG_OK;
}

static vg_code shape_sdbb(vg_op *op, vg_status *st) {
    vg_dtype t = vg__op_input_dtype(op, 0);
    if (!sdbb_int_dtype(t))
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "SampleDistortedBoundingBoxV2: image_size has dtype %s (uint8, int32 or int64)",
                             vg_dtype_name(t));
    if (vg__op_input_dtype(op, 1) != VG_FLOAT || vg__op_input_dtype(op, 2) != VG_FLOAT)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "SampleDistortedBoundingBoxV2: bounding_boxes and min_object_covered must be float");
    float ar[2], area[2];
    int64_t ma;
    bool ui;
    vg_code c = sdbb_attrs(op, ar, area, &ma, &ui, st);
    if (c != VG_OK) return c;
    vg_shape is = vg__op_input_shape(op, 0), bb = vg__op_input_shape(op, 1), mc = vg__op_input_shape(op, 2);
    if (vg__shape_need_rank(&is, 1, "Shape must be rank 1 but is rank %d for image_size", st)) return st->code;
    if (is.ndims == 1 && is.dims[0] >= 0 && is.dims[0] != 3)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Dimension must be 3 but is %lld for image_size",
                             (long long)is.dims[0]);
    if (vg__shape_need_rank(&bb, 3, "Shape must be rank 3 but is rank %d for bounding_boxes", st)) return st->code;
    if (bb.ndims == 3 && bb.dims[2] >= 0 && bb.dims[2] != 4)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Dimension must be 4 but is %lld for bounding_boxes",
                             (long long)bb.dims[2]);
    if (mc.ndims > 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Shape must be rank 0 but is rank %d for min_object_covered",
                             mc.ndims);
    vg__op_set_default_attr_type(op, "T", t);
    vg__op_default_seeds(op);
    vg__op_set_num_outputs(op, 3);
    int64_t three = 3, box[3] = {1, 1, 4};
    vg__op_set_output(op, 0, t, vg_shape_make(&three, 1));
    vg__op_set_output(op, 1, t, vg_shape_make(&three, 1));
    vg__op_set_output(op, 2, VG_FLOAT, vg_shape_make(box, 3));
    return VG_OK;
}

static void *sdbb_create(const vg_op *op, vg_status *st) {
    return vg__seed_stream_new(op, 0x5DB0B0C5A3E1D2F7ull, "SampleDistortedBoundingBox state", st);
}
static void sdbb_destroy(void *p) { vg__free(p); }

static void sdbb_put(vg_tensor *t, int i, int64_t v) {
    void *d = vg_tensor_data(t);
    switch (vg_tensor_dtype(t)) {
    case VG_UINT8: ((uint8_t *)d)[i] = (uint8_t)v; break;
    case VG_INT32: ((int32_t *)d)[i] = (int32_t)v; break;
    default: ((int64_t *)d)[i] = v; break;
    }
}

static int64_t sdbb_get_int(const vg_tensor *t, int64_t i) {
    const void *d = vg_tensor_data(t);
    switch (vg_tensor_dtype(t)) {
    case VG_UINT8: return ((const uint8_t *)d)[i];
    case VG_INT32: return ((const int32_t *)d)[i];
    default: return ((const int64_t *)d)[i];
    }
}

static vg_code kernel_sdbb(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_op *op = vg__kctx_op(ctx);
    float ar[2], area[2];
    int64_t max_attempts;
    bool use_image;
    vg_code c = sdbb_attrs(op, ar, area, &max_attempts, &use_image, st);
    if (c != VG_OK) return c;
    const vg_tensor *is = vg__kctx_input(ctx, 0), *ib = vg__kctx_input(ctx, 1), *mc = vg__kctx_input(ctx, 2);
    if (vg_tensor_ndims(mc) != 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "min_object_covered must be 0-D");
    float min_covered = *(const float *)vg_tensor_data(mc);
    if (!(min_covered >= 0))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Min object covered must be non-negative: %g", min_covered);
    if (vg_tensor_ndims(is) != 1) return vg_status_set(st, VG_INVALID_ARGUMENT, "image_size must be 1-dimensional");
    if (vg_tensor_dim(is, 0) != 3) return vg_status_set(st, VG_INVALID_ARGUMENT, "image_size must contain 3 elements");
    /* TF reads them as uint64: a negative size is a huge one */
    uint64_t h_raw = (uint64_t)sdbb_get_int(is, 0), w_raw = (uint64_t)sdbb_get_int(is, 1);
    if (h_raw >= (uint64_t)INT32_MAX) return vg_status_set(st, VG_INVALID_ARGUMENT, "image height cannot be >= int32 max");
    if (w_raw >= (uint64_t)INT32_MAX) return vg_status_set(st, VG_INVALID_ARGUMENT, "image width cannot be >= int32 max");
    const int height = (int)h_raw, width = (int)w_raw;
    if (vg_tensor_ndims(ib) != 3)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "input boxes must be 3-dimensional [batch, num_boxes, coords]: rank %d",
                             vg_tensor_ndims(ib));
    if (vg_tensor_dim(ib, 2) != 4)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "bounding boxes must have shape [4] or [*, 4], got last dimension %lld",
                             (long long)vg_tensor_dim(ib, 2));
    int64_t nb = vg_tensor_num_elements(ib) / 4;
    sdbb_rect *boxes = vg__malloc(sizeof *boxes * (size_t)(nb + 1));
    if (!boxes) return VG_OOM(st, "SampleDistortedBoundingBox boxes");
    const float *bd = vg_tensor_data(ib);
    for (int64_t b = 0; b < nb; b++) {
        for (int i = 0; i < 4; i++)
            if (!(bd[4 * b + i] >= 0.0f && bd[4 * b + i] <= 1.0f)) {
                vg__free(boxes);
                return vg_status_set(st, VG_INVALID_ARGUMENT, "All bounding box coordinates must be in [0.0, 1.0]: %g",
                                     bd[4 * b + i]);
            }
        boxes[b] = (sdbb_rect){(int)(bd[4 * b + 1] * (float)width), (int)(bd[4 * b] * (float)height),
                               (int)(bd[4 * b + 3] * (float)width), (int)(bd[4 * b + 2] * (float)height)};
    }
    const sdbb_rect image_rect = {0, 0, width, height};
    if (nb < 1) {
        if (!use_image) {
            vg__free(boxes);
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "No bounding boxes provided as input. One must enable use_image_if_no_bounding_boxes if "
                                 "you wish to not provide any bounding boxes.");
        }
        boxes[nb++] = image_rect;
    }
    void *p = NULL;
    if ((c = vg__kctx_state(ctx, sdbb_create, sdbb_destroy, &p)) != VG_OK) {
        vg__free(boxes);
        return c;
    }
    vg__seed_stream *s = p;
    /* TF reserves 4 * max_attempts samples per run */
    sdbb_rng rng = {s, atomic_fetch_add_explicit(&s->counter, (uint64_t)(4 * max_attempts), memory_order_relaxed)};
    sdbb_rect crop = image_rect;
    bool found = false;
    for (int64_t i = 0; i < max_attempts && !found; i++) {
        float aspect = sdbb_rand_float(&rng) * (ar[1] - ar[0]) + ar[0];
        sdbb_rect r;
        if (sdbb_random_crop(width, height, area[0], area[1], aspect, &rng, &r) && sdbb_overlap_ok(r, min_covered, boxes, nb))
            crop = r, found = true;
    }
    vg__free(boxes);
    if (!found) crop = image_rect;
    const int tw = crop.max_x - crop.min_x, th = crop.max_y - crop.min_y;
    vg_dtype t = vg_tensor_dtype(is);
    int64_t three = 3, bdims[3] = {1, 1, 4};
    vg_tensor *ob, *os, *obox;
    if ((c = vg__kctx_alloc_output(ctx, 0, t, &three, 1, &ob)) != VG_OK) return c;
    if ((c = vg__kctx_alloc_output(ctx, 1, t, &three, 1, &os)) != VG_OK) return c;
    if ((c = vg__kctx_alloc_output(ctx, 2, VG_FLOAT, bdims, 3, &obox)) != VG_OK) return c;
    sdbb_put(ob, 0, crop.min_y), sdbb_put(ob, 1, crop.min_x), sdbb_put(ob, 2, 0);
    sdbb_put(os, 0, th), sdbb_put(os, 1, tw), sdbb_put(os, 2, -1);
    float *o = vg_tensor_data(obox);
    o[0] = (float)crop.min_y / (float)height, o[1] = (float)crop.min_x / (float)width;
    o[2] = (float)crop.max_y / (float)height, o[3] = (float)crop.max_x / (float)width;
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* DrawBoundingBoxes (TF 1.15's draw_bounding_box_op.cc): float images [b, h, w, d], d in
 * {1, 3, 4}, boxes float [b, n, 4]; box k is drawn as a one-pixel outline in colour
 * k % 10 of TF's table (yellow, blue, red, lime, purple, olive, maroon, navy, aqua,
 * fuchsia; the first channel set to 1 for grey images: white). */

static vg_code shape_draw_bboxes(vg_op *op, vg_status *st) {
    if (vg__op_input_dtype(op, 0) != VG_FLOAT || vg__op_input_dtype(op, 1) != VG_FLOAT)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "DrawBoundingBoxes: images and boxes must be float (T = float)");
    vg_shape im = vg__op_input_shape(op, 0), bx = vg__op_input_shape(op, 1);
    if (vg__shape_need_rank(&im, 4, "Shape must be rank 4 but is rank %d for images", st)) return st->code;
    if (vg__shape_need_rank(&bx, 3, "Shape must be rank 3 but is rank %d for boxes", st)) return st->code;
    if (im.ndims == 4 && im.dims[3] >= 0 && im.dims[3] != 1 && im.dims[3] != 3 && im.dims[3] != 4)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Channel depth should be either 1 (GRY), 3 (RGB), or 4 (RGBA)");
    return vg__op_set_t_output(op, VG_FLOAT, im);
}

static vg_code kernel_draw_bboxes(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *images = vg__kctx_input(ctx, 0), *boxes = vg__kctx_input(ctx, 1);
    if (vg_tensor_ndims(images) != 4) return vg_status_set(st, VG_INVALID_ARGUMENT, "The rank of the images should be 4");
    if (vg_tensor_ndims(boxes) != 3)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "The rank of the boxes tensor should be 3");
    if (vg_tensor_dim(images, 0) != vg_tensor_dim(boxes, 0))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "The batch sizes should be the same");
    const int64_t batch = vg_tensor_dim(images, 0), height = vg_tensor_dim(images, 1), width = vg_tensor_dim(images, 2),
                  depth = vg_tensor_dim(images, 3);
    if (depth != 4 && depth != 1 && depth != 3)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Channel depth should be either 1 (GRY), 3 (RGB), or 4 (RGBA)");
    if (vg_tensor_dim(boxes, 2) < 4 && vg_tensor_dim(boxes, 1) > 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "boxes must have 4 coordinates in the last dimension");
    float table[10][4] = {{1, 1, 0, 1},   {0, 0, 1, 1},   {1, 0, 0, 1},   {0, 1, 0, 1}, {0.5f, 0, 0.5f, 1},
                          {0.5f, 0.5f, 0, 1}, {0.5f, 0, 0, 1}, {0, 0, 0.5f, 1}, {0, 1, 1, 1}, {1, 0, 1, 1}};
    if (depth == 1)
        for (int i = 0; i < 10; i++) table[i][0] = 1;
    int64_t dims[4] = {batch, height, width, depth};
    vg_tensor *o;
    vg_code c = vg__kctx_alloc_output(ctx, 0, VG_FLOAT, dims, 4, &o);
    if (c != VG_OK) return c;
    float *canvas = vg_tensor_data(o);
    memcpy(canvas, vg_tensor_data(images), sizeof(float) * (size_t)vg_tensor_num_elements(images));
    const int64_t nb = vg_tensor_dim(boxes, 1), bl = vg_tensor_dim(boxes, 2);
    const float *bd = vg_tensor_data(boxes);
#define PIX(b, i, j, ch) canvas[(((b) * height + (i)) * width + (j)) * depth + (ch)]
    for (int64_t b = 0; b < batch; b++)
        for (int64_t k = 0; k < nb; k++) {
            const float *box = bd + (b * nb + k) * bl, *color = table[k % 10];
            const int64_t min_row = (int64_t)(box[0] * (float)(height - 1)), max_row = (int64_t)(box[2] * (float)(height - 1));
            const int64_t min_col = (int64_t)(box[1] * (float)(width - 1)), max_col = (int64_t)(box[3] * (float)(width - 1));
            const int64_t min_row_c = min_row > 0 ? min_row : 0, max_row_c = max_row < height - 1 ? max_row : height - 1;
            const int64_t min_col_c = min_col > 0 ? min_col : 0, max_col_c = max_col < width - 1 ? max_col : width - 1;
            if (min_row > max_row || min_col > max_col) {
                vg_logf(VG_LOG_WARN, "Bounding box (%lld,%lld,%lld,%lld) is inverted and will not be drawn.",
                        (long long)min_row, (long long)min_col, (long long)max_row, (long long)max_col);
                continue;
            }
            if (min_row >= height || max_row < 0 || min_col >= width || max_col < 0) {
                vg_logf(VG_LOG_WARN,
                        "Bounding box (%lld,%lld,%lld,%lld) is completely outside the image and will not be drawn.",
                        (long long)min_row, (long long)min_col, (long long)max_row, (long long)max_col);
                continue;
            }
            /* the edges inside the image, in TF's order: top and bottom rows across the
             * clipped columns, then left and right columns down the clipped rows */
            const struct {
                bool drawn, row;
                int64_t at, lo, hi;
            } edge[4] = {{min_row >= 0, true, min_row, min_col_c, max_col_c},
                         {max_row < height, true, max_row, min_col_c, max_col_c},
                         {min_col >= 0, false, min_col, min_row_c, max_row_c},
                         {max_col < width, false, max_col, min_row_c, max_row_c}};
            for (int e = 0; e < 4; e++)
                for (int64_t v = edge[e].lo; edge[e].drawn && v <= edge[e].hi; v++)
                    for (int64_t ch = 0; ch < depth; ch++)
                        PIX(b, edge[e].row ? edge[e].at : v, edge[e].row ? v : edge[e].at, ch) = color[ch];
        }
#undef PIX
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* builders */

static vg_output resize_op(vg_graph *g, const char *type, vg_output images, vg_output size, bool align, bool hpc,
                           const char *name) {
    if (!g || !images.op || !size.op) return vg_out(NULL, 0);
    vg_op_builder *b = vg__builder_with_inputs(g, type, name, type, (vg_output[]){images, size}, 2);
    if (!b) return vg_out(NULL, 0);
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
    vg_op_builder *b = vg__builder_with_inputs(g, type, name, type, (vg_output[]){images}, 1);
    if (!b) return vg_out(NULL, 0);
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

/* TF's defaults for the zero fields of o. */
static vg_sample_distorted_bbox_options resolve_bbox_options(const vg_sample_distorted_bbox_options *opts) {
    vg_sample_distorted_bbox_options o = opts ? *opts : (vg_sample_distorted_bbox_options){0};
    if (o.min_object_covered == 0 && !o.zero_min_object_covered) o.min_object_covered = 0.1f;
    if (o.aspect_ratio_range[0] == 0 && o.aspect_ratio_range[1] == 0)
        o.aspect_ratio_range[0] = 0.75f, o.aspect_ratio_range[1] = 1.33f;
    if (o.area_range[0] == 0 && o.area_range[1] == 0) o.area_range[0] = 0.05f, o.area_range[1] = 1.0f;
    if (o.max_attempts == 0) o.max_attempts = 100;
    return o;
}

vg_op *vg_sample_distorted_bounding_box_v2(vg_graph *g, vg_output image_size, vg_output bounding_boxes,
                                           vg_output min_object_covered, const vg_sample_distorted_bbox_options *opts,
                                           const char *name) {
    if (!g || !image_size.op || !bounding_boxes.op) return NULL;
    vg_sample_distorted_bbox_options o = resolve_bbox_options(opts);
    if (!min_object_covered.op) {
        min_object_covered = vg_const_f32(g, o.min_object_covered, "min_object_covered");
        if (!min_object_covered.op) return NULL;
    }
    int64_t s1, s2;
    vg_graph_get_seed(g, o.seed, &s1, &s2);
    vg_op_builder *b = vg__builder_with_inputs(g, "SampleDistortedBoundingBoxV2", name, "SampleDistortedBoundingBoxV2",
                                               (vg_output[]){image_size, bounding_boxes, min_object_covered}, 3);
    if (!b) return NULL;
    vg__builder_set_seeds(b, s1, s2);
    vg_op_builder_set_attr_float_list(b, "aspect_ratio_range", o.aspect_ratio_range, 2);
    vg_op_builder_set_attr_float_list(b, "area_range", o.area_range, 2);
    vg_op_builder_set_attr_int(b, "max_attempts", o.max_attempts);
    vg_op_builder_set_attr_bool(b, "use_image_if_no_bounding_boxes", o.use_image_if_no_bounding_boxes);
    return vg_op_builder_finish(b);
}

vg_output vg_draw_bounding_boxes(vg_graph *g, vg_output images, vg_output boxes, const char *name) {
    if (!g || !images.op || !boxes.op) return vg_out(NULL, 0);
    return vg__build_simple(g, "DrawBoundingBoxes", name, "DrawBoundingBoxes", (vg_output[]){images, boxes}, 2);
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
    {"DrawBoundingBoxes", 2, 2, VG__OP_NOT_DIFFERENTIABLE, 0, shape_draw_bboxes, kernel_draw_bboxes, NULL},
    {"SampleDistortedBoundingBoxV2", 3, 3, VG__OP_STATEFUL | VG__OP_NOT_DIFFERENTIABLE, 0, shape_sdbb, kernel_sdbb, NULL},
    {0},
};
