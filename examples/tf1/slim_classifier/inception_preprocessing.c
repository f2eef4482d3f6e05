/* inception_preprocessing.c - research/slim/preprocessing/inception_preprocessing.py
 * (apply_with_random_selector, distort_color, distorted_bounding_box_crop,
 * preprocess_for_train, preprocess_for_eval, preprocess_image) and
 * preprocessing_factory.py's get_preprocessing. */
#include "slim_classifier.h"
#include <stdio.h>
#include <string.h>

typedef vg_output (*case_fn)(vg_graph *g, vg_output x, int the_case, void *user);

/* apply_with_random_selector(x, func, num_cases): sel = random_uniform([], maxval=num_cases,
 * int32); merge([func(switch(x, equal(sel, case))[1], case) for case in range(num_cases)])[0] */
static vg_output apply_with_random_selector(vg_graph *g, vg_output x, case_fn func, void *user, int num_cases) {
    vg_output sel = vg_random_uniform_range(g, vg_const_i32_vec(g, NULL, 0, "random_uniform/shape"), 0, num_cases,
                                            VG_INT32, 0, "random_uniform");
    vg_output outs[8];
    for (int c = 0; c < num_cases && c < 8; c++) {
        vg_op *sw = vg_switch(g, x, vg_equal(g, sel, vg_const_i32(g, c, "Equal/y"), "Equal"), "Switch");
        outs[c] = func(g, vg_out(sw, 1), c, user);
    }
    return vg_out(vg_merge(g, outs, num_cases, "Merge"), 0);
}

vg_output inception_distort_color(vg_graph *g, vg_output image, int color_ordering, bool fast_mode, const char *scope) {
    char sc[256];
    vg_graph_unique_name(g, scope ? scope : "distort_color", sc, sizeof sc - 1);
    strcat(sc, "/");
    vg_graph_push_scope(g, sc);
    const float bd = 32.f / 255.f;
    if (fast_mode) {
        if (color_ordering == 0) {
            image = vg_image_random_brightness(g, image, bd, 0, NULL);
            image = vg_image_random_saturation(g, image, 0.5f, 1.5f, 0, NULL);
        } else {
            image = vg_image_random_saturation(g, image, 0.5f, 1.5f, 0, NULL);
            image = vg_image_random_brightness(g, image, bd, 0, NULL);
        }
    } else {
        switch (color_ordering) {
        case 0:
            image = vg_image_random_brightness(g, image, bd, 0, NULL);
            image = vg_image_random_saturation(g, image, 0.5f, 1.5f, 0, NULL);
            image = vg_image_random_hue(g, image, 0.2f, 0, NULL);
            image = vg_image_random_contrast(g, image, 0.5f, 1.5f, 0, NULL);
            break;
        case 1:
            image = vg_image_random_saturation(g, image, 0.5f, 1.5f, 0, NULL);
            image = vg_image_random_brightness(g, image, bd, 0, NULL);
            image = vg_image_random_contrast(g, image, 0.5f, 1.5f, 0, NULL);
            image = vg_image_random_hue(g, image, 0.2f, 0, NULL);
            break;
        case 2:
            image = vg_image_random_contrast(g, image, 0.5f, 1.5f, 0, NULL);
            image = vg_image_random_hue(g, image, 0.2f, 0, NULL);
            image = vg_image_random_brightness(g, image, bd, 0, NULL);
            image = vg_image_random_saturation(g, image, 0.5f, 1.5f, 0, NULL);
            break;
        case 3:
            image = vg_image_random_hue(g, image, 0.2f, 0, NULL);
            image = vg_image_random_saturation(g, image, 0.5f, 1.5f, 0, NULL);
            image = vg_image_random_contrast(g, image, 0.5f, 1.5f, 0, NULL);
            image = vg_image_random_brightness(g, image, bd, 0, NULL);
            break;
        default:
            vg_graph_set_error(g, VG_INVALID_ARGUMENT, "color_ordering must be in [0, 3]");
            image = (vg_output){NULL, 0};
        }
    }
    /* the random_* ops do not necessarily clamp */
    vg_output r = vg_clip_by_value(g, image, vg_const_f32(g, 0.f, "clip_by_value/clip_value_min"),
                                   vg_const_f32(g, 1.f, "clip_by_value/clip_value_max"), "clip_by_value");
    vg_graph_pop_scope(g);
    return r;
}

/* distorted_bounding_box_crop(image, bbox, min_object_covered=0.1, aspect_ratio_range=(0.75, 1.33),
 * area_range=(0.05, 1.0), max_attempts=100): the crop and the distorted box */
static vg_output distorted_bounding_box_crop(vg_graph *g, vg_output image, vg_output bbox, vg_output *distort_bbox) {
    char sc[256];
    vg_graph_unique_name(g, "distorted_bounding_box_crop", sc, sizeof sc - 1);
    strcat(sc, "/");
    vg_graph_push_scope(g, sc);
    vg_sample_distorted_bbox_options o = {.min_object_covered = 0.1f, .use_image_if_no_bounding_boxes = true};
    vg_op *s = vg_sample_distorted_bounding_box_v2(g, vg_shape_op(g, image, VG_INT32, "Shape"), bbox,
                                                   (vg_output){NULL, 0}, &o, "sample_distorted_bounding_box");
    vg_output cropped = {NULL, 0};
    *distort_bbox = (vg_output){NULL, 0};
    if (s) {
        cropped = vg_slice(g, image, vg_out(s, 0), vg_out(s, 1), "Slice");
        *distort_bbox = vg_out(s, 2);
    }
    vg_graph_pop_scope(g);
    return cropped;
}

typedef struct resize_args { int height, width; } resize_args;
static vg_output resize_case(vg_graph *g, vg_output x, int method, void *user) {
    const resize_args *a = user;
    /* vigil's resize_images has bilinear and nearest neighbour; fast_mode uses bilinear (0) only */
    if (method > 1) {
        vg_graph_set_error(g, VG_UNIMPLEMENTED, "resize method %d (bicubic / area) is not in vigil", method);
        return (vg_output){NULL, 0};
    }
    return vg_image_resize_images(g, x, a->height, a->width, (vg_resize_method)method, false, NULL);
}

static vg_output color_case(vg_graph *g, vg_output x, int ordering, void *user) {
    return inception_distort_color(g, x, ordering, *(const bool *)user, NULL);
}

vg_output inception_preprocess_for_train(vg_graph *g, vg_output image, int height, int width, vg_output bbox,
                                         bool fast_mode, const char *scope) {
    char sc[256];
    vg_graph_unique_name(g, scope ? scope : "distort_image", sc, sizeof sc - 1);
    strcat(sc, "/");
    vg_graph_push_scope(g, sc);
    if (!bbox.op) {
        double b[4] = {0, 0, 1, 1};
        bbox = vg_const_values(g, VG_FLOAT, b, 4, NULL, 0, (const int64_t[]){1, 1, 4}, 3, false, "Const");
    }
    if (vg_output_dtype(image) != VG_FLOAT) image = vg_image_convert_image_dtype(g, image, VG_FLOAT, false, NULL);
    vg_output image_with_box = vg_draw_bounding_boxes(g, vg_expand_dims(g, image, 0, "ExpandDims"), bbox, NULL);
    vg_summary_image(g, "image_with_bounding_boxes", image_with_box, 3);
    vg_output distorted_bbox;
    vg_output distorted_image = distorted_bounding_box_crop(g, image, bbox, &distorted_bbox);
    /* distorted_image.set_shape([None, None, 3]): vigil has no set_shape; the channel count
     * is restored after the resize, below */
    vg_output image_with_distorted_box =
        vg_draw_bounding_boxes(g, vg_expand_dims(g, image, 0, "ExpandDims_1"), distorted_bbox, "DrawBoundingBoxes_1");
    vg_summary_image(g, "images_with_distorted_bounding_box", image_with_distorted_box, 3);
    resize_args ra = {height, width};
    int num_resize_cases = fast_mode ? 1 : 4;
    distorted_image = apply_with_random_selector(g, distorted_image, resize_case, &ra, num_resize_cases);
    distorted_image = vg_reshape_c(g, distorted_image, (const int64_t[]){height, width, 3}, 3, "set_shape");
    vg_summary_image(g, "cropped_resized_image", vg_expand_dims(g, distorted_image, 0, "ExpandDims_2"), 3);
    distorted_image = vg_image_random_flip_left_right(g, distorted_image, 0, NULL);
    distorted_image = apply_with_random_selector(g, distorted_image, color_case, &fast_mode, 4);
    vg_summary_image(g, "final_distorted_image", vg_expand_dims(g, distorted_image, 0, "ExpandDims_3"), 3);
    distorted_image = vg_sub(g, distorted_image, vg_const_f32(g, 0.5f, "Sub/y"), "Sub");
    distorted_image = vg_mul(g, distorted_image, vg_const_f32(g, 2.0f, "Mul/y"), "Mul");
    vg_graph_pop_scope(g);
    return distorted_image;
}

vg_output inception_preprocess_for_eval(vg_graph *g, vg_output image, int height, int width, double central_fraction,
                                        const char *scope) {
    char sc[256];
    vg_graph_unique_name(g, scope ? scope : "eval_image", sc, sizeof sc - 1);
    strcat(sc, "/");
    vg_graph_push_scope(g, sc);
    if (vg_output_dtype(image) != VG_FLOAT) image = vg_image_convert_image_dtype(g, image, VG_FLOAT, false, NULL);
    if (central_fraction > 0) image = vg_image_central_crop(g, image, central_fraction, NULL);
    if (height > 0 && width > 0) {
        image = vg_expand_dims(g, image, 0, "ExpandDims");
        int32_t sz[2] = {height, width};
        image = vg_resize_bilinear(g, image, vg_const_i32_vec(g, sz, 2, "size"), false, false, "ResizeBilinear");
        image = vg_squeeze(g, image, (const int32_t[]){0}, 1, "Squeeze");
        image = vg_reshape_c(g, image, (const int64_t[]){height, width, 3}, 3, "set_shape");
    }
    image = vg_sub(g, image, vg_const_f32(g, 0.5f, "Sub/y"), "Sub");
    image = vg_mul(g, image, vg_const_f32(g, 2.0f, "Mul/y"), "Mul");
    vg_graph_pop_scope(g);
    return image;
}

vg_output inception_preprocess_image(vg_graph *g, vg_output image, int height, int width, bool is_training,
                                     vg_output bbox, bool fast_mode) {
    if (is_training) return inception_preprocess_for_train(g, image, height, width, bbox, fast_mode, NULL);
    return inception_preprocess_for_eval(g, image, height, width, 0.875, NULL);
}

static vg_output inception_fn(vg_graph *g, vg_output image, int height, int width, bool is_training) {
    return inception_preprocess_image(g, image, height, width, is_training, (vg_output){NULL, 0}, true);
}

/* preprocessing_factory.get_preprocessing: preprocessing_fn_map (at 0cf9932f) */
vg_code preprocessing_factory_get(const char *name, preprocessing_fn *out, vg_status *st) {
    static const char *inception[] = {"inception",    "inception_v1",        "inception_v2", "inception_v3",
                                      "inception_v4", "inception_resnet_v2", "mobilenet_v1"};
    static const char *other[] = {"cifarnet",      "lenet", "resnet_v1_50", "resnet_v1_101", "resnet_v1_152",
                                  "vgg",           "vgg_a", "vgg_16",       "vgg_19"};
    for (size_t i = 0; name && i < sizeof inception / sizeof inception[0]; i++)
        if (strcmp(name, inception[i]) == 0) return *out = inception_fn, VG_OK;
    for (size_t i = 0; name && i < sizeof other / sizeof other[0]; i++)
        if (strcmp(name, other[i]) == 0)
            return vg_status_set(st, VG_UNIMPLEMENTED,
                                 "Preprocessing [%s] (cifarnet / lenet / vgg_preprocessing) is not ported; use "
                                 "--preprocessing_name=inception",
                                 name);
    /* mobilenet_v1_025, resnet_v1_200, ...: not in the map, TF raises this too */
    return vg_status_set(st, VG_INVALID_ARGUMENT, "Preprocessing name [%s] was not recognized", name ? name : "");
}
