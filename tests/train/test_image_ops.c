/* test_image_ops.c - tf.image: ResizeBilinear / ResizeNearestNeighbor (values
 * hand-computed from TF's interpolation rules for legacy, align_corners and
 * half_pixel_centers; gradients by finite differences), AdjustContrastv2,
 * AdjustSaturation, AdjustHue, RGBToHSV / HSVToRGB (known colours), and the composites
 * of vigil/image.h: flips, random flips (both outcomes seen, each image either flipped
 * or not), random_crop (a window of the input), crop / pad to bounding box,
 * resize_image_with_crop_or_pad, central_crop, brightness, contrast,
 * per_image_standardization (mean 0, stddev 1), convert_image_dtype, and TF's errors. */
#include "gradcheck.h"
#include "op_test_util.h"
#include "status_fixture.h"

static vg_output size2(vg_graph *g, int h, int w) {
    int32_t s[2] = {h, w};
    return vg_const_i32_vec(g, s, 2, NULL);
}

/* ResizeNearestNeighbor (nn) or ResizeBilinear of x to [h, w]. */
static vg_output resize(vg_graph *g, bool nn, vg_output x, int h, int w, bool align_corners, bool half_pixel) {
    return nn ? vg_resize_nearest_neighbor(g, x, size2(g, h, w), align_corners, half_pixel, NULL)
              : vg_resize_bilinear(g, x, size2(g, h, w), align_corners, half_pixel, NULL);
}

/* The image [[1, 2], [3, 4]] (shape [1, 2, 2, 1], dtype dt) resized by nn or bilinear
 * to 4x4 (legacy) must be up4, to 3x3 with align_corners up3, both of dtype dt; returns
 * the image. */
static vg_output check_resize_2x2(vg_graph *g, bool nn, vg_dtype dt, const double up4[16], const double up3[9]) {
    static const int64_t d[4] = {1, 2, 2, 1}, o4[4] = {1, 4, 4, 1}, o3[4] = {1, 3, 3, 1};
    static const double x[4] = {1, 2, 3, 4};
    vg_output in = cst(g, dt, d, 4, x);
    expect(run(g, resize(g, nn, in, 4, 4, false, false)), dt, o4, 4, up4);
    expect(run(g, resize(g, nn, in, 3, 3, true, false)), dt, o3, 4, up3);
    return in;
}

static void test_resize_bilinear_values(void) {
    vg_graph *g = vg_graph_new();
    int64_t d[4] = {1, 2, 2, 1};
    double x[4] = {1, 2, 3, 4};
    /* legacy: source y = 0, .5, 1, 1.5 -> rows lerp, clamped at the edge */
    static const double leg[16] = {1, 1.5, 2, 2, 2, 2.5, 3, 3, 3, 3.5, 4, 4, 3, 3.5, 4, 4};
    static const double al[9] = {1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4};
    vg_output in = check_resize_2x2(g, false, VG_FLOAT, leg, al);
    /* half pixel: source = (i + .5) * .5 - .5 = -.25, .25, .75, 1.25 */
    double hp1[4] = {1, 1.25, 1.75, 2};
    vg_tensor *t = run(g, vg_resize_bilinear(g, in, size2(g, 4, 4), false, true, NULL));
    for (int i = 0; t && i < 4; i++) CHECK_NEAR(get(t, i), hp1[i], 1e-6);
    vg_tensor_free(t);
    /* uint8 input gives float output */
    t = run(g, vg_resize_bilinear(g, cst(g, VG_UINT8, d, 4, x), size2(g, 3, 3), true, false, NULL));
    CHECK(t && vg_tensor_dtype(t) == VG_FLOAT);
    vg_tensor_free(t);
    vg_resize_bilinear(g, in, size2(g, 3, 3), true, true, NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "If half_pixel_centers is True, align_corners must be False.");
    vg_graph_free(g);
    g = vg_graph_new();
    int64_t d3[3] = {2, 2, 1};
    vg_resize_bilinear(g, cst(g, VG_FLOAT, d3, 3, x), size2(g, 3, 3), false, false, NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "input must be 4-dimensional");
    vg_graph_free(g);
    g = vg_graph_new();
    vg_resize_bilinear(g, cst(g, VG_FLOAT, d, 4, x), size2(g, 0, 3), false, false, NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, NULL);
    vg_graph_free(g);
}

static void test_resize_nn_values(void) {
    vg_graph *g = vg_graph_new();
    static const double leg[16] = {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4};
    /* align_corners: scale .5, round(0, .5, 1) = 0, 0 (half to even? roundf: 1), 1 */
    static const double al[9] = {1, 2, 2, 3, 4, 4, 3, 4, 4};
    check_resize_2x2(g, true, VG_INT32, leg, al);
    /* downsizing 4x4 -> 2x2 legacy picks rows/cols 0 and 2 */
    int64_t d44[4] = {1, 4, 4, 1}, o2[4] = {1, 2, 2, 1};
    double big[16];
    for (int i = 0; i < 16; i++) big[i] = i;
    double dn[4] = {0, 2, 8, 10};
    expect(run(g, vg_resize_nearest_neighbor(g, cst(g, VG_FLOAT, d44, 4, big), size2(g, 2, 2), false, false, NULL)),
           VG_FLOAT, o2, 4, dn);
    /* half pixel centers: (i + .5) * 2 floored = 1, 3 */
    double hp[4] = {5, 7, 13, 15};
    expect(run(g, vg_resize_nearest_neighbor(g, cst(g, VG_FLOAT, d44, 4, big), size2(g, 2, 2), false, true, NULL)),
           VG_FLOAT, o2, 4, hp);
    vg_graph_free(g);
}

static void test_resize_grads(void) {
    static const struct { int ih, iw, oh, ow; bool align, hpc; } cases[] = {
        {3, 4, 5, 7, false, false}, {3, 4, 5, 7, true, false}, {3, 4, 5, 7, false, true}, {5, 6, 2, 3, false, false},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (int nn = 0; nn < 2; nn++) {
            vg_graph *g = vg_graph_new();
            int64_t d[4] = {2, cases[c].ih, cases[c].iw, 2};
            double v[2 * 6 * 6 * 2];
            for (int i = 0; i < 2 * cases[c].ih * cases[c].iw * 2; i++) v[i] = sin(i * 0.7) * 2;
            vg_tensor *xv;
            vg_output x = ph(g, VG_DOUBLE, d, 4, v, &xv);
            vg_output y = resize(g, nn, x, cases[c].oh, cases[c].ow, cases[c].align, cases[c].hpc);
            if (!nn) y = vg_cast(g, y, VG_DOUBLE, NULL); /* bilinear outputs float */
            CHECK_EQ_INT(vg_gradcheck(g, &x, &xv, 1, y, 1e-3, 2e-3), 0);
            vg_tensor_free(xv);
            vg_graph_free(g);
        }
    }
    /* float32 images through ResizeBilinearGrad too */
    vg_graph *g = vg_graph_new();
    int64_t d[4] = {1, 3, 3, 1};
    vg_tensor *xv;
    vg_output x = ph(g, VG_FLOAT, d, 4, NULL, &xv);
    CHECK_EQ_INT(vg_gradcheck(g, &x, &xv, 1, vg_resize_bilinear(g, x, size2(g, 4, 5), false, false, NULL), 1e-2, 1e-2), 0);
    vg_tensor_free(xv);
    vg_graph_free(g);
}

static void test_color_ops(void) {
    vg_graph *g = vg_graph_new();
    int64_t d[2] = {4, 3};
    double rgb[12] = {1, 0, 0, 0, 1, 0, 0.2, 0.4, 0.6, 0.5, 0.5, 0.5};
    vg_output x = cst(g, VG_FLOAT, d, 2, rgb);
    /* h of red 0, green 1/3; (0.2, 0.4, 0.6): v .6, s 2/3, h = 4/6 + (.2 - .4) / (6 * .4) = 7/12; gray s 0 */
    double hsv[12] = {0, 1, 1, 1.0 / 3, 1, 1, 7.0 / 12, 2.0 / 3, 0.6, 0, 0, 0.5};
    expect(run(g, vg_rgb_to_hsv(g, x, NULL)), VG_FLOAT, d, 2, hsv);
    expect(run(g, vg_hsv_to_rgb(g, vg_rgb_to_hsv(g, x, NULL), NULL)), VG_FLOAT, d, 2, rgb);
    /* hue + 1/3: red -> green, green -> blue */
    double hue[12] = {0, 1, 0, 0, 0, 1, 0.6, 0.2, 0.4, 0.5, 0.5, 0.5};
    expect(run(g, vg_adjust_hue_op(g, x, vg_const_f32(g, 1.0f / 3, NULL), NULL)), VG_FLOAT, d, 2, hue);
    /* saturation 0 -> gray at v; 0.5 on (0.2, 0.4, 0.6): s 1/3 -> (0.4, 0.5, 0.6) */
    double sat0[12] = {1, 1, 1, 1, 1, 1, 0.6, 0.6, 0.6, 0.5, 0.5, 0.5};
    expect(run(g, vg_adjust_saturation_op(g, x, vg_const_f32(g, 0, NULL), NULL)), VG_FLOAT, d, 2, sat0);
    vg_tensor *t = run(g, vg_adjust_saturation_op(g, x, vg_const_f32(g, 0.5f, NULL), NULL));
    if (t) {
        CHECK_NEAR(get(t, 6), 0.4, 1e-6);
        CHECK_NEAR(get(t, 7), 0.5, 1e-6);
        CHECK_NEAR(get(t, 8), 0.6, 1e-6);
    }
    vg_tensor_free(t);
    /* contrast: per channel mean over h, w of a 2x1x2 image */
    int64_t di[3] = {2, 1, 2};
    double im[4] = {1, 10, 3, 30};
    double con[4] = {0, 0, 4, 40}; /* means 2 and 20, factor 2 */
    expect(run(g, vg_adjust_contrastv2(g, cst(g, VG_FLOAT, di, 3, im), vg_const_f32(g, 2, NULL), NULL)), VG_FLOAT, di, 3, con);
    int64_t d2[2] = {2, 2};
    vg_rgb_to_hsv(g, cst(g, VG_FLOAT, d2, 2, NULL), NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "3 channels");
    vg_graph_free(g);
}

static void test_flips_and_crops(void) {
    vg_graph *g = vg_graph_new();
    int64_t d[3] = {2, 3, 1};
    double x[6] = {1, 2, 3, 4, 5, 6};
    vg_output img = cst(g, VG_FLOAT, d, 3, x);
    double lr[6] = {3, 2, 1, 6, 5, 4}, ud[6] = {4, 5, 6, 1, 2, 3};
    vg_output f = vg_image_flip_left_right(g, img, NULL);
    CHECK(f.op && strcmp(vg_op_name(f.op), "flip_left_right/ReverseV2") == 0);
    expect(run(g, f), VG_FLOAT, d, 3, lr);
    expect(run(g, vg_image_flip_up_down(g, img, NULL)), VG_FLOAT, d, 3, ud);
    /* random flips: each run either flips or not; over 40 runs both happen */
    vg_output rf = vg_image_random_flip_left_right(g, img, 7, NULL);
    vg_session *s = vg_session_new(g, NULL, NULL);
    int flipped = 0, kept = 0;
    for (int i = 0; i < 40; i++) {
        vg_tensor *t = NULL;
        vg_status st;
        vg_session_run(s, NULL, NULL, NULL, 0, &rf, &t, 1, NULL, 0, NULL, &st);
        if (t && get(t, 0) == 3 && get(t, 5) == 4) flipped++;
        else if (t && get(t, 0) == 1 && get(t, 5) == 6) kept++;
        vg_tensor_free(t);
    }
    CHECK_EQ_INT(flipped + kept, 40);
    CHECK(flipped > 5 && kept > 5);
    vg_session_free(s);
    /* batch: per image */
    int64_t db[4] = {16, 1, 2, 1};
    double xb[32];
    for (int i = 0; i < 32; i++) xb[i] = i;
    vg_tensor *t = run(g, vg_image_random_flip_up_down(g, vg_image_flip_left_right(g, cst(g, VG_FLOAT, db, 4, xb), NULL), 3, NULL));
    for (int i = 0; t && i < 16; i++) CHECK(get(t, 2 * i) == 2 * i + 1 && get(t, 2 * i + 1) == 2 * i); /* h = 1: up_down no-op */
    vg_tensor_free(t);
    /* random_crop: a 2x2 window of a 4x4 image */
    int64_t d44[3] = {4, 4, 1};
    double x44[16];
    for (int i = 0; i < 16; i++) x44[i] = i;
    vg_output rc = vg_image_random_crop(g, cst(g, VG_FLOAT, d44, 3, x44), (const int64_t[]){2, 2, 1}, 3, 5, NULL);
    s = vg_session_new(g, NULL, NULL);
    bool seen[9] = {false};
    for (int i = 0; i < 60; i++) {
        vg_tensor *c = NULL;
        vg_status st;
        vg_session_run(s, NULL, NULL, NULL, 0, &rc, &c, 1, NULL, 0, NULL, &st);
        CHECK(c && vg_tensor_dim(c, 0) == 2 && vg_tensor_dim(c, 1) == 2);
        if (!c) continue;
        int tl = (int)get(c, 0), r0 = tl / 4, c0 = tl % 4;
        CHECK(r0 <= 2 && c0 <= 2);
        CHECK(get(c, 1) == tl + 1 && get(c, 2) == tl + 4 && get(c, 3) == tl + 5);
        if (r0 <= 2 && c0 <= 2) seen[r0 * 3 + c0] = true;
        vg_tensor_free(c);
    }
    int nseen = 0;
    for (int i = 0; i < 9; i++) nseen += seen[i];
    CHECK(nseen >= 6);
    vg_session_free(s);
    /* crop_to_bounding_box / pad_to_bounding_box / resize_with_crop_or_pad / central_crop */
    vg_output big = cst(g, VG_FLOAT, d44, 3, x44);
    int64_t d22[3] = {2, 2, 1}, d25[3] = {2, 5, 1}, d33[3] = {3, 3, 1};
    double cr[4] = {6, 7, 10, 11};
    expect(run(g, vg_image_crop_to_bounding_box(g, big, 1, 2, 2, 2, NULL)), VG_FLOAT, d22, 3, cr);
    expect(run(g, vg_image_central_crop(g, big, 0.5, NULL)), VG_FLOAT, d22, 3, (double[]){5, 6, 9, 10});
    double pd[9] = {0, 0, 0, 0, 1, 2, 0, 4, 5};
    int64_t d23[3] = {2, 2, 1};
    (void)d23;
    vg_output small = cst(g, VG_FLOAT, d22, 3, (double[]){1, 2, 4, 5});
    expect(run(g, vg_image_pad_to_bounding_box(g, small, 1, 1, 3, 3, NULL)), VG_FLOAT, d33, 3, pd);
    /* 4x4 -> 2x5: crop rows 1..2, pad width by 1 left... width diff 1: pad offset 0, one column on the right */
    double cp[10] = {4, 5, 6, 7, 0, 8, 9, 10, 11, 0};
    expect(run(g, vg_image_resize_with_crop_or_pad(g, big, 2, 5, NULL)), VG_FLOAT, d25, 3, cp);
    vg_image_crop_to_bounding_box(g, big, 3, 0, 2, 2, NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "height must be >= target + offset.");
    vg_graph_free(g);
    g = vg_graph_new();
    vg_image_pad_to_bounding_box(g, cst(g, VG_FLOAT, d44, 3, x44), 1, 0, 4, 4, NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "height must be <= target - offset");
    vg_graph_free(g);
    g = vg_graph_new();
    vg_image_random_contrast(g, cst(g, VG_FLOAT, d44, 3, x44), 1.0f, 0.5f, 0, NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "upper must be > lower.");
    vg_graph_free(g);
    g = vg_graph_new();
    vg_image_flip_left_right(g, cst(g, VG_FLOAT, d22, 2, x44), NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, NULL);
    vg_graph_free(g);
}

static void test_adjust_and_standardize(void) {
    vg_graph *g = vg_graph_new();
    int64_t d[3] = {2, 2, 1};
    double x[4] = {0, 64, 128, 255};
    vg_output u8 = cst(g, VG_UINT8, d, 3, x);
    /* convert_image_dtype: uint8 -> float is x / 255; back is round-down of x * 255.5 */
    vg_output f = vg_image_convert_image_dtype(g, u8, VG_FLOAT, false, NULL);
    double fv[4] = {0, 64 / 255.0, 128 / 255.0, 1};
    expect(run(g, f), VG_FLOAT, d, 3, fv);
    expect(run(g, vg_image_convert_image_dtype(g, f, VG_UINT8, true, NULL)), VG_UINT8, d, 3, x);
    /* saturate clips */
    vg_output over = cst(g, VG_FLOAT, d, 3, (double[]){-0.5, 0.5, 1.5, 1});
    expect(run(g, vg_image_convert_image_dtype(g, over, VG_UINT8, true, NULL)), VG_UINT8, d, 3, (double[]){0, 127, 255, 255});
    /* brightness on uint8: in float, saturated back */
    expect(run(g, vg_image_adjust_brightness(g, u8, vg_const_f32(g, 0.5f, NULL), NULL)), VG_UINT8, d, 3,
           (double[]){127, 191, 255, 255});
    /* random_brightness stays within max_delta of the input */
    vg_output fl = cst(g, VG_FLOAT, d, 3, x);
    vg_tensor *t = run(g, vg_image_random_brightness(g, fl, 10, 3, NULL));
    for (int i = 0; t && i < 4; i++) CHECK(fabs(get(t, i) - x[i]) <= 10.0001);
    if (t) CHECK_NEAR(get(t, 1) - x[1], get(t, 3) - x[3], 1e-3); /* one delta for the image */
    vg_tensor_free(t);
    /* random_contrast factor in [0.5, 1.5]: distance from the mean scales by it */
    t = run(g, vg_image_random_contrast(g, fl, 0.5f, 1.5f, 3, NULL));
    double mean = (0 + 64 + 128 + 255) / 4.0;
    if (t) {
        double k = (get(t, 0) - mean) / (x[0] - mean);
        CHECK(k >= 0.5 - 1e-5 && k <= 1.5 + 1e-5);
        CHECK_NEAR((get(t, 3) - mean) / (x[3] - mean), k, 1e-4);
    }
    vg_tensor_free(t);
    /* per_image_standardization: mean 0, stddev 1 (float32 out); a constant image -> 0 */
    vg_output ps = vg_image_per_image_standardization(g, u8, NULL);
    t = run(g, ps);
    double s = 0, s2 = 0;
    for (int i = 0; t && i < 4; i++) s += get(t, i), s2 += get(t, i) * get(t, i);
    CHECK(t && vg_tensor_dtype(t) == VG_FLOAT);
    CHECK_NEAR(s / 4, 0, 1e-5);
    CHECK_NEAR(s2 / 4, 1, 1e-4);
    vg_tensor_free(t);
    expect(run(g, vg_image_per_image_standardization(g, cst(g, VG_FLOAT, d, 3, (double[]){3, 3, 3, 3}), NULL)), VG_FLOAT, d,
           3, (double[]){0, 0, 0, 0});
    /* resize_images on a 3-D image keeps rank */
    int64_t o[3] = {4, 4, 1};
    t = run(g, vg_image_resize_images(g, fl, 4, 4, VG_RESIZE_NEAREST_NEIGHBOR, false, NULL));
    CHECK(t && vg_tensor_ndims(t) == 3 && vg_tensor_dim(t, 0) == o[0]);
    vg_tensor_free(t);
    /* random_saturation keeps v and the hue; random_hue keeps s and v */
    int64_t d1[3] = {1, 1, 3};
    vg_output px = cst(g, VG_FLOAT, d1, 3, (double[]){0.2, 0.4, 0.6});
    t = run(g, vg_rgb_to_hsv(g, vg_image_random_saturation(g, px, 0.5f, 1.5f, 4, NULL), NULL));
    if (t) {
        CHECK_NEAR(get(t, 0), 7.0 / 12, 1e-5);
        CHECK(get(t, 1) >= 2.0 / 3 * 0.5 - 1e-5 && get(t, 1) <= 2.0 / 3 * 1.5 + 1e-5);
        CHECK_NEAR(get(t, 2), 0.6, 1e-5);
    }
    vg_tensor_free(t);
    t = run(g, vg_rgb_to_hsv(g, vg_image_random_hue(g, px, 0.2f, 4, NULL), NULL));
    if (t) {
        double dh = fabs(get(t, 0) - 7.0 / 12);
        CHECK(dh <= 0.2 + 1e-5);
        CHECK_NEAR(get(t, 1), 2.0 / 3, 1e-5);
        CHECK_NEAR(get(t, 2), 0.6, 1e-5);
    }
    vg_tensor_free(t);
    vg_graph *g2 = vg_graph_new();
    vg_image_random_hue(g2, cst(g2, VG_FLOAT, d1, 3, NULL), 0.7f, 0, NULL);
    EXPECT_GRAPH_ERROR(g2, VG_INVALID_ARGUMENT, "max_delta must be in the interval [0, 0.5].");
    vg_graph_free(g2);
    /* saturation / hue on uint8 images go through float and back */
    int64_t dc[3] = {1, 1, 3};
    expect(run(g, vg_image_adjust_saturation(g, cst(g, VG_UINT8, dc, 3, (double[]){255, 0, 0}), vg_const_f32(g, 0, NULL), NULL)),
           VG_UINT8, dc, 3, (double[]){255, 255, 255});
    expect(run(g, vg_image_adjust_hue(g, cst(g, VG_UINT8, dc, 3, (double[]){255, 0, 0}), vg_const_f32(g, 1.0f / 3, NULL), NULL)),
           VG_UINT8, dc, 3, (double[]){0, 255, 0});
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_resize_bilinear_values);
    RUN_TEST(test_resize_nn_values);
    RUN_TEST(test_resize_grads);
    RUN_TEST(test_color_ops);
    RUN_TEST(test_flips_and_crops);
    RUN_TEST(test_adjust_and_standardize);
    TEST_MAIN_END();
}
