/*
 * image.c - tf.image's Python-level functions (TF 1.15 image_ops_impl.py,
 * random_ops.random_crop) built from public builders: flips are ReverseV2 (random ones
 * a Select on a uniform draw < 0.5), crops a Slice, pads a Pad, brightness an Add,
 * contrast / saturation / hue the kernels of src/kernels/media/image_ops.c, standardization
 * a mean / variance composite. Each opens the name scope TF's function opens.
 */
#include "vigil/image.h"
#include "vigil/image_ops.h"
#include "vigil/ops.h"
#include "vigil/ops_ext.h"
#include "vigil/train_lib.h"
#include <math.h>
#include <stdint.h>
#include <string.h>

static const vg_output k_none = {NULL, 0};

static bool ok(vg_graph *g, vg_output x) { return g && x.op && vg_graph_status(g, NULL) == VG_OK; }

/* Rank of an image (3 or 4); records an error and returns -1 otherwise. */
static int image_rank(vg_graph *g, vg_output image, const char *fn, bool allow4) {
    vg_shape s = vg_output_shape(image);
    if (s.ndims == 3 || (allow4 && s.ndims == 4)) return s.ndims;
    vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: 'image' must be %s, got rank %d", fn,
                       allow4 ? "either 3 or 4-dimensional" : "three-dimensional", s.ndims);
    return -1;
}

static vg_output flip(vg_graph *g, vg_output image, int axis, const char *scope) {
    if (!ok(g, image)) return k_none;
    int r = image_rank(g, image, scope, true);
    if (r < 0) return k_none;
    int32_t ax = (int32_t)(axis + (r == 4 ? 1 : 0));
    vg_graph_push_scope(g, scope);
    vg_output out = vg_reverse_c(g, image, &ax, 1, "ReverseV2");
    vg_graph_pop_scope(g);
    return out;
}

vg_output vg_image_flip_left_right(vg_graph *g, vg_output image, const char *name) {
    return flip(g, image, 1, name ? name : "flip_left_right");
}
vg_output vg_image_flip_up_down(vg_graph *g, vg_output image, const char *name) {
    return flip(g, image, 0, name ? name : "flip_up_down");
}

static vg_output random_flip(vg_graph *g, vg_output image, int axis, int64_t seed, const char *scope) {
    if (!ok(g, image)) return k_none;
    int r = image_rank(g, image, scope, true);
    if (r < 0) return k_none;
    vg_graph_push_scope(g, scope);
    vg_output shape;
    if (r == 3) {
        shape = vg_const_array(g, VG_INT32, (const int64_t[]){0}, 1, NULL, "random_uniform/shape");
    } else {
        shape = vg_slice_c(g, vg_shape_op(g, image, VG_INT32, "Shape"), (const int64_t[]){0}, (const int64_t[]){1}, 1,
                           "strided_slice");
    }
    vg_output u = vg_random_uniform_range(g, shape, 0.0, 1.0, VG_FLOAT, seed, "random_uniform");
    vg_output cond = vg_less(g, u, vg_const_f32(g, 0.5f, "Less/y"), "Less");
    int32_t ax = (int32_t)(axis + (r == 4 ? 1 : 0));
    vg_output flipped = vg_reverse_c(g, image, &ax, 1, "ReverseV2");
    vg_output out = vg_select(g, cond, flipped, image, "Select");
    vg_graph_pop_scope(g);
    return out;
}

vg_output vg_image_random_flip_left_right(vg_graph *g, vg_output image, int64_t seed, const char *name) {
    return random_flip(g, image, 1, seed, name ? name : "random_flip_left_right");
}
vg_output vg_image_random_flip_up_down(vg_graph *g, vg_output image, int64_t seed, const char *name) {
    return random_flip(g, image, 0, seed, name ? name : "random_flip_up_down");
}

vg_output vg_image_random_crop(vg_graph *g, vg_output value, const int64_t *size, int n, int64_t seed, const char *name) {
    if (!ok(g, value)) return k_none;
    vg_shape s = vg_output_shape(value);
    if (n <= 0 || !size || (s.ndims >= 0 && s.ndims != n)) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "random_crop: size has %d entries for a value of rank %d", n, s.ndims);
        return k_none;
    }
    for (int i = 0; i < n; i++)
        if (size[i] < 0 || size[i] > INT32_MAX || (s.ndims == n && s.dims[i] >= 0 && size[i] > s.dims[i])) {
            vg_graph_set_error(g, VG_INVALID_ARGUMENT, "random_crop: Need value.shape >= size, got size[%d] = %lld for dim %lld",
                               i, (long long)size[i], (long long)(s.ndims == n ? s.dims[i] : -1));
            return k_none;
        }
    vg_graph_push_scope(g, name ? name : "random_crop");
    int32_t sz32[VG_MAX_DIMS];
    for (int i = 0; i < n; i++) sz32[i] = (int32_t)size[i];
    vg_output shape = vg_shape_op(g, value, VG_INT32, "Shape");
    vg_output sizet = vg_const_i32_vec(g, sz32, n, "size");
    /* limit = shape - size + 1; offset = uniform_int([rank], 0, int32 max) % limit */
    vg_output limit = vg_add(g, vg_sub(g, shape, sizet, "sub"), vg_const_i32(g, 1, "add/y"), "add");
    int64_t s1, s2;
    vg_graph_get_seed(g, seed, &s1, &s2);
    vg_output u = vg_random_uniform_int(g, vg_const_i32_vec(g, (const int32_t[]){n}, 1, "Shape_1"),
                                        vg_const_i32(g, 0, "random_uniform/min"),
                                        vg_const_i32(g, INT32_MAX, "random_uniform/max"), s1, s2, "random_uniform");
    vg_output offset = vg_floor_mod(g, u, limit, "mod");
    vg_output out = vg_slice(g, value, offset, sizet, "Slice");
    vg_graph_pop_scope(g);
    return out;
}

/* Static height and width of a 3-D / 4-D image; INVALID_ARGUMENT when unknown. */
static bool static_hw(vg_graph *g, vg_output image, const char *fn, int *rank, int64_t *h, int64_t *w) {
    int r = image_rank(g, image, fn, true);
    if (r < 0) return false;
    vg_shape s = vg_output_shape(image);
    *rank = r, *h = s.dims[r - 3], *w = s.dims[r - 2];
    if (*h < 0 || *w < 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: the image's height and width must be known when the graph is built",
                           fn);
        return false;
    }
    return true;
}

/* The input checks of the bounding-box ops: a usable image (ok) with static_hw. */
static bool static_hw_input(vg_graph *g, vg_output image, const char *fn, int *rank, int64_t *h, int64_t *w) {
    return ok(g, image) && static_hw(g, image, fn, rank, h, w);
}

static vg_output crop(vg_graph *g, vg_output image, int r, int64_t oh, int64_t ow, int64_t th, int64_t tw) {
    int64_t begin[4], size[4];
    int k = 0;
    if (r == 4) begin[k] = 0, size[k++] = -1;
    begin[k] = oh, size[k++] = th;
    begin[k] = ow, size[k++] = tw;
    begin[k] = 0, size[k++] = -1;
    return vg_slice_c(g, image, begin, size, r, "Slice");
}

vg_output vg_image_crop_to_bounding_box(vg_graph *g, vg_output image, int64_t offset_height, int64_t offset_width,
                                        int64_t target_height, int64_t target_width, const char *name) {
    int r;
    int64_t h, w;
    if (!static_hw_input(g, image, "crop_to_bounding_box", &r, &h, &w)) return k_none;
    const char *err = offset_width < 0              ? "offset_width must be >= 0."
                      : offset_height < 0           ? "offset_height must be >= 0."
                      : target_width <= 0           ? "target_width must be > 0."
                      : target_height <= 0          ? "target_height must be > 0."
                      : w < target_width + offset_width   ? "width must be >= target + offset."
                      : h < target_height + offset_height ? "height must be >= target + offset."
                                                    : NULL;
    if (err) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "crop_to_bounding_box: %s", err);
        return k_none;
    }
    vg_graph_push_scope(g, name ? name : "crop_to_bounding_box");
    vg_output out = crop(g, image, r, offset_height, offset_width, target_height, target_width);
    vg_graph_pop_scope(g);
    return out;
}

vg_output vg_image_pad_to_bounding_box(vg_graph *g, vg_output image, int64_t offset_height, int64_t offset_width,
                                       int64_t target_height, int64_t target_width, const char *name) {
    int r;
    int64_t h, w;
    if (!static_hw_input(g, image, "pad_to_bounding_box", &r, &h, &w)) return k_none;
    int64_t after_w = target_width - offset_width - w, after_h = target_height - offset_height - h;
    const char *err = offset_height < 0 ? "offset_height must be >= 0"
                      : offset_width < 0 ? "offset_width must be >= 0"
                      : after_w < 0      ? "width must be <= target - offset"
                      : after_h < 0      ? "height must be <= target - offset"
                                         : NULL;
    if (err) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "pad_to_bounding_box: %s", err);
        return k_none;
    }
    vg_graph_push_scope(g, name ? name : "pad_to_bounding_box");
    int64_t pads[8] = {0}, *p = pads;
    if (r == 4) p += 2;
    p[0] = offset_height, p[1] = after_h, p[2] = offset_width, p[3] = after_w;
    int32_t p32[8];
    for (int i = 0; i < 8; i++) p32[i] = (int32_t)pads[i];
    vg_output paddings = vg_const_array(g, VG_INT32, (const int64_t[]){r, 2}, 2, p32, "stack");
    vg_op_builder *b = vg_op_builder_new(g, "Pad", "Pad");
    vg_op_builder_add_input(b, image);
    vg_op_builder_add_input(b, paddings);
    vg_output out = vg_out(vg_op_builder_finish(b), 0);
    vg_graph_pop_scope(g);
    return out;
}

static int64_t floordiv2(int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

vg_output vg_image_resize_with_crop_or_pad(vg_graph *g, vg_output image, int64_t target_height, int64_t target_width,
                                           const char *name) {
    int r;
    int64_t h, w;
    if (!static_hw_input(g, image, "resize_image_with_crop_or_pad", &r, &h, &w)) return k_none;
    if (target_width <= 0 || target_height <= 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "resize_image_with_crop_or_pad: target_%s must be > 0.",
                           target_width <= 0 ? "width" : "height");
        return k_none;
    }
    vg_graph_push_scope(g, name ? name : "resize_image_with_crop_or_pad");
    int64_t wd = target_width - w, hd = target_height - h;
    int64_t ocw = floordiv2(-wd) > 0 ? floordiv2(-wd) : 0, opw = floordiv2(wd) > 0 ? floordiv2(wd) : 0;
    int64_t och = floordiv2(-hd) > 0 ? floordiv2(-hd) : 0, oph = floordiv2(hd) > 0 ? floordiv2(hd) : 0;
    vg_output c = vg_image_crop_to_bounding_box(g, image, och, ocw, target_height < h ? target_height : h,
                                                target_width < w ? target_width : w, NULL);
    vg_output out = vg_image_pad_to_bounding_box(g, c, oph, opw, target_height, target_width, NULL);
    vg_graph_pop_scope(g);
    return out;
}

vg_output vg_image_central_crop(vg_graph *g, vg_output image, double fraction, const char *name) {
    if (!ok(g, image)) return k_none;
    if (!(fraction > 0.0 && fraction <= 1.0)) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "central_crop: central_fraction must be within (0, 1], got %g", fraction);
        return k_none;
    }
    int r;
    int64_t h, w;
    if (!static_hw(g, image, "central_crop", &r, &h, &w)) return k_none;
    if (fraction == 1.0) return image;
    vg_graph_push_scope(g, name ? name : "central_crop");
    int64_t hs = (int64_t)(((double)h - (double)h * fraction) / 2), ws = (int64_t)(((double)w - (double)w * fraction) / 2);
    vg_output out = crop(g, image, r, hs, ws, h - 2 * hs, w - 2 * ws);
    vg_graph_pop_scope(g);
    return out;
}

vg_output vg_image_resize_images(vg_graph *g, vg_output images, int64_t height, int64_t width, vg_resize_method method,
                                 bool align_corners, const char *name) {
    if (!ok(g, images)) return k_none;
    int r = image_rank(g, images, "resize_images", true);
    if (r < 0) return k_none;
    if (height <= 0 || width <= 0 || height > INT32_MAX || width > INT32_MAX) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "resize_images: size must be positive, got [%lld, %lld]", (long long)height,
                           (long long)width);
        return k_none;
    }
    vg_graph_push_scope(g, name ? name : "resize_images");
    vg_output x = r == 3 ? vg_expand_dims(g, images, 0, "ExpandDims") : images;
    vg_output size = vg_const_i32_vec(g, (const int32_t[]){(int32_t)height, (int32_t)width}, 2, "size");
    vg_output out = method == VG_RESIZE_NEAREST_NEIGHBOR
                        ? vg_resize_nearest_neighbor(g, x, size, align_corners, false, "ResizeNearestNeighbor")
                        : vg_resize_bilinear(g, x, size, align_corners, false, "ResizeBilinear");
    if (r == 3) out = vg_squeeze(g, out, (const int32_t[]){0}, 1, "Squeeze");
    vg_graph_pop_scope(g);
    return out;
}

static bool is_float(vg_dtype dt) { return dt == VG_FLOAT || dt == VG_DOUBLE; }
static double int_max(vg_dtype dt) { return dt == VG_UINT8 ? 255.0 : dt == VG_INT32 ? 2147483647.0 : 0.0; }

vg_output vg_image_convert_image_dtype(vg_graph *g, vg_output image, vg_dtype dtype, bool saturate, const char *name) {
    if (!ok(g, image)) return k_none;
    vg_dtype in = vg_output_dtype(image);
    if (in == dtype) return image;
    bool fi = is_float(in), fo = is_float(dtype);
    if ((!fi && int_max(in) == 0) || (!fo && int_max(dtype) == 0) || (!fi && !fo)) {
        vg_graph_set_error(g, VG_UNIMPLEMENTED, "convert_image_dtype: %s -> %s is not supported (uint8, int32, float, double)",
                           vg_dtype_name(in), vg_dtype_name(dtype));
        return k_none;
    }
    vg_graph_push_scope(g, name ? name : "convert_image");
    vg_output out;
    if (fi && fo) {
        out = vg_cast(g, image, dtype, "Cast");
    } else if (!fi) { /* int -> float: cast, then * 1/max */
        vg_output c = vg_cast(g, image, dtype, "Cast");
        out = vg_mul(g, c, vg_cast(g, vg_const_f64(g, 1.0 / int_max(in), "Cast_1/x"), dtype, "Cast_1"), "mul");
    } else { /* float -> int: * (max + 0.5), then (saturate_)cast */
        vg_output sc = vg_mul(g, image, vg_cast(g, vg_const_f64(g, int_max(dtype) + 0.5, "mul/y"), in, "Cast"), "mul");
        if (saturate) {
            double lo = dtype == VG_UINT8 ? 0.0 : -2147483648.0;
            sc = vg_maximum(g, sc, vg_cast(g, vg_const_f64(g, lo, "Maximum/y"), in, "Cast_2"), "Maximum");
            sc = vg_minimum(g, sc, vg_cast(g, vg_const_f64(g, int_max(dtype), "Minimum/y"), in, "Cast_3"), "Minimum");
        }
        out = vg_cast(g, sc, dtype, "Cast_1");
    }
    vg_graph_pop_scope(g);
    return out;
}

/* TF's pattern for colour adjustments: integer images go through float32 and back. */
typedef vg_output (*adjust_fn)(vg_graph *g, vg_output x, vg_output f, const char *name);

static vg_output adjust(vg_graph *g, vg_output image, vg_output f, adjust_fn fn, const char *scope, const char *opname) {
    if (!ok(g, image) || !f.op) return k_none;
    vg_graph_push_scope(g, scope);
    vg_dtype dt = vg_output_dtype(image);
    vg_output flt = is_float(dt) ? image : vg_image_convert_image_dtype(g, image, VG_FLOAT, false, NULL);
    vg_output adj = fn(g, flt, f, opname);
    vg_output out = is_float(dt) ? adj : vg_image_convert_image_dtype(g, adj, dt, true, NULL);
    vg_graph_pop_scope(g);
    return out;
}

static vg_output add_fn(vg_graph *g, vg_output x, vg_output f, const char *name) {
    return vg_add(g, x, vg_output_dtype(f) == vg_output_dtype(x) ? f : vg_cast(g, f, vg_output_dtype(x), "Cast"), name);
}

vg_output vg_image_adjust_brightness(vg_graph *g, vg_output image, vg_output delta, const char *name) {
    return adjust(g, image, delta, add_fn, name ? name : "adjust_brightness", "Add");
}

vg_output vg_image_random_brightness(vg_graph *g, vg_output image, float max_delta, int64_t seed, const char *name) {
    if (!ok(g, image)) return k_none;
    if (max_delta < 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "random_brightness: max_delta must be non-negative.");
        return k_none;
    }
    vg_output shape = vg_const_array(g, VG_INT32, (const int64_t[]){0}, 1, NULL, "random_uniform/shape");
    vg_output delta = vg_random_uniform_range(g, shape, -max_delta, max_delta, VG_FLOAT, seed, "random_uniform");
    return vg_image_adjust_brightness(g, image, delta, name);
}

static vg_output contrast_fn(vg_graph *g, vg_output x, vg_output f, const char *name) {
    return vg_adjust_contrastv2(g, x, f, name);
}
static vg_output saturation_fn(vg_graph *g, vg_output x, vg_output f, const char *name) {
    return vg_adjust_saturation_op(g, x, f, name);
}
static vg_output hue_fn(vg_graph *g, vg_output x, vg_output f, const char *name) {
    return vg_adjust_hue_op(g, x, f, name);
}

vg_output vg_image_adjust_contrast(vg_graph *g, vg_output images, vg_output contrast_factor, const char *name) {
    return adjust(g, images, contrast_factor, contrast_fn, name ? name : "adjust_contrast", "AdjustContrastv2");
}

vg_output vg_image_random_contrast(vg_graph *g, vg_output image, float lower, float upper, int64_t seed, const char *name) {
    if (!ok(g, image)) return k_none;
    if (!(upper > lower) || lower < 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "random_contrast: %s", !(upper > lower) ? "upper must be > lower." : "lower must be non-negative.");
        return k_none;
    }
    vg_output shape = vg_const_array(g, VG_INT32, (const int64_t[]){0}, 1, NULL, "random_uniform/shape");
    vg_output f = vg_random_uniform_range(g, shape, lower, upper, VG_FLOAT, seed, "random_uniform");
    return vg_image_adjust_contrast(g, image, f, name);
}

vg_output vg_image_adjust_saturation(vg_graph *g, vg_output image, vg_output saturation_factor, const char *name) {
    return adjust(g, image, saturation_factor, saturation_fn, name ? name : "adjust_saturation", "AdjustSaturation");
}

vg_output vg_image_adjust_hue(vg_graph *g, vg_output image, vg_output delta, const char *name) {
    return adjust(g, image, delta, hue_fn, name ? name : "adjust_hue", "AdjustHue");
}

vg_output vg_image_random_saturation(vg_graph *g, vg_output image, float lower, float upper, int64_t seed,
                                     const char *name) {
    if (!ok(g, image)) return k_none;
    if (!(upper > lower) || lower < 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "random_saturation: %s",
                           !(upper > lower) ? "upper must be > lower." : "lower must be non-negative.");
        return k_none;
    }
    vg_output shape = vg_const_array(g, VG_INT32, (const int64_t[]){0}, 1, NULL, "random_uniform/shape");
    vg_output f = vg_random_uniform_range(g, shape, lower, upper, VG_FLOAT, seed, "random_uniform");
    return vg_image_adjust_saturation(g, image, f, name);
}

vg_output vg_image_random_hue(vg_graph *g, vg_output image, float max_delta, int64_t seed, const char *name) {
    if (!ok(g, image)) return k_none;
    if (!(max_delta >= 0 && max_delta <= 0.5f)) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "random_hue: max_delta must be in the interval [0, 0.5].");
        return k_none;
    }
    vg_output shape = vg_const_array(g, VG_INT32, (const int64_t[]){0}, 1, NULL, "random_uniform/shape");
    vg_output d = vg_random_uniform_range(g, shape, -max_delta, max_delta, VG_FLOAT, seed, "random_uniform");
    return vg_image_adjust_hue(g, image, d, name);
}

vg_output vg_image_per_image_standardization(vg_graph *g, vg_output image, const char *name) {
    if (!ok(g, image)) return k_none;
    vg_shape s = vg_output_shape(image);
    if (s.ndims < 3) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "per_image_standardization: 'image' must be at least three-dimensional, got rank %d",
                           s.ndims);
        return k_none;
    }
    int64_t np = 1;
    for (int i = s.ndims - 3; i < s.ndims; i++) {
        if (s.dims[i] < 0) {
            vg_graph_set_error(g, VG_INVALID_ARGUMENT, "per_image_standardization: the image's last three dims must be known");
            return k_none;
        }
        np *= s.dims[i];
    }
    vg_graph_push_scope(g, name ? name : "per_image_standardization");
    const int32_t axes[3] = {-1, -2, -3};
    vg_output x = vg_cast(g, image, VG_FLOAT, "Cast");
    vg_output mean = vg_reduce_mean(g, x, axes, 3, true, "Mean");
    vg_output var = vg_reduce_mean(g, vg_square(g, vg_sub(g, x, mean, "reduce_std/sub"), "reduce_std/Square"), axes, 3, true,
                                   "reduce_std/reduce_variance");
    vg_output sd = vg_sqrt(g, var, "reduce_std/Sqrt");
    vg_output min_sd = vg_const_f32(g, np > 0 ? (float)(1.0 / sqrt((double)np)) : INFINITY, "Rsqrt");
    vg_output adj = vg_maximum(g, sd, min_sd, "Maximum");
    vg_output out = vg_div(g, vg_sub(g, x, mean, "sub"), adj, "truediv");
    vg_graph_pop_scope(g);
    return out;
}
