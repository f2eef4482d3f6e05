/* test_sample_distorted_bbox.c - SampleDistortedBoundingBoxV2 (src/kernels/media/image_ops.c,
 * vg_sample_distorted_bounding_box_v2), after TF 1.15's image_ops_test.py
 * SelectDistortedCropBoxTest: _testSampleDistortedBoundingBox's invariants over many
 * runs of one session (the crop lies in the image; its area ratio lies in area_range;
 * the object - a patch of 1s in a zero image, summed over tf.slice(image, begin, size) -
 * is covered at least min_object_covered; the aspect ratio is in aspect_ratio_range up
 * to the rounding of the width), for testWholeImageBoundingBox, testWithBoundingBox,
 * testSampleDistortedBoundingBoxShape-style outputs (shapes, bboxes = the crop
 * normalised), the min_object_covered tensor input (V2), no boxes with and without
 * use_image_if_no_bounding_boxes, the whole-image fallback when no attempt fits,
 * determinism under seeds, and the kernel's errors. Also DrawBoundingBoxes
 * (tf.image.draw_bounding_boxes), after DrawBoundingBoxTest: the border of a whole-image
 * box in the first colour, the colour cycling over TF's table of 10 (RGB, RGBA, grey),
 * a partial box, a box partly outside the image, an inverted box (not drawn), errors. */
#include "op_test_util.h"
#include "kernels_fixture.h"

#define H 40
#define W 50

typedef struct sdbb_case {
    float box[4]; /* ymin, xmin, ymax, xmax */
    float min_covered;
    float ar[2], area[2];
    int iters;
} sdbb_case;

/* The kernel's pixel rectangle of a normalised box (TF truncates). */
static void box_px(const float b[4], int *y0, int *x0, int *y1, int *x1) {
    *y0 = (int)(b[0] * H), *x0 = (int)(b[1] * W), *y1 = (int)(b[2] * H), *x1 = (int)(b[3] * W);
}

static void run_case(const sdbb_case *c, bool min_as_placeholder) {
    vg_graph *g = vg_graph_new();
    vg_graph_set_seed(g, 5);
    int y0, x0, y1, x1;
    box_px(c->box, &y0, &x0, &y1, &x1);
    /* the object: 1s on its pixels, 0 elsewhere */
    int64_t idims[3] = {H, W, 1};
    vg_tensor *img = vg_tensor_new(VG_INT32, idims, 3, NULL);
    int32_t *ip = vg_tensor_data(img);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) ip[y * W + x] = (y >= y0 && y < y1 && x >= x0 && x < x1);
    vg_output image = vg_const(g, img, "image");
    vg_tensor_free(img);
    double bb[4] = {c->box[0], c->box[1], c->box[2], c->box[3]};
    vg_output boxes = cst(g, VG_FLOAT, (int64_t[]){1, 1, 4}, 3, bb);
    vg_sample_distorted_bbox_options o = (vg_sample_distorted_bbox_options){0};
    o.aspect_ratio_range[0] = c->ar[0], o.aspect_ratio_range[1] = c->ar[1];
    o.area_range[0] = c->area[0], o.area_range[1] = c->area[1];
    o.min_object_covered = c->min_covered;
    o.zero_min_object_covered = c->min_covered == 0;
    vg_output mc = {NULL, 0};
    vg_tensor *mcv = NULL;
    if (min_as_placeholder) {
        mc = vg_placeholder(g, VG_FLOAT, NULL, 0, "min_object_covered");
        mcv = vg_tensor_new(VG_FLOAT, NULL, 0, NULL);
        *(float *)vg_tensor_data(mcv) = c->min_covered;
    }
    vg_op *op = vg_sample_distorted_bounding_box_v2(g, vg_shape_op(g, image, VG_INT32, NULL), boxes, mc, &o, NULL);
    CHECK(op != NULL);
    if (!op) {
        vg_status gs;
        vg_graph_status(g, &gs);
        fprintf(stderr, "build failed: %s\n", gs.msg);
        vg_graph_free(g);
        vg_tensor_free(mcv);
        return;
    }
    vg_output y = vg_slice(g, image, vg_out(op, 0), vg_out(op, 1), "crop");
    vg_status st;
    vg_session *s = vg_session_new(g, NULL, &st);
    const double obj_area = (double)(x1 - x0) * (y1 - y0);
    int distinct = 0, prev_y = -1, prev_x = -1;
    double min_ar = 1e9, max_ar = 0, min_area = 1e9, max_area = 0, min_cov = 1e9;
    for (int it = 0; it < c->iters; it++) {
        vg_output fetch[4] = {y, vg_out(op, 0), vg_out(op, 1), vg_out(op, 2)};
        vg_tensor *out[4] = {0};
        vg_output feeds[1] = {mc};
        vg_tensor *vals[1] = {mcv};
        if (vg_session_run(s, NULL, feeds, vals, mcv ? 1 : 0, fetch, out, 4, NULL, 0, NULL, &st) != VG_OK) {
            fprintf(stderr, "run failed: %s\n", st.msg);
            CHECK(0);
            break;
        }
        CHECK_EQ_INT(vg_tensor_dtype(out[1]), VG_INT32);
        CHECK_EQ_INT(vg_tensor_num_elements(out[1]), 3);
        CHECK_EQ_INT(vg_tensor_ndims(out[3]), 3);
        const int32_t *b = vg_tensor_data(out[1]), *sz = vg_tensor_data(out[2]);
        const float *nb = vg_tensor_data(out[3]);
        /* the crop lies in the image; channels kept */
        CHECK(b[0] >= 0 && b[1] >= 0 && b[2] == 0 && sz[2] == -1);
        CHECK(sz[0] > 0 && sz[1] > 0 && b[0] + sz[0] <= H && b[1] + sz[1] <= W);
        CHECK_EQ_INT(vg_tensor_dim(out[0], 0), sz[0]);
        CHECK_EQ_INT(vg_tensor_dim(out[0], 1), sz[1]);
        /* bboxes: the crop, normalised */
        CHECK_NEAR(nb[0], (double)b[0] / H, 1e-6);
        CHECK_NEAR(nb[1], (double)b[1] / W, 1e-6);
        CHECK_NEAR(nb[2], (double)(b[0] + sz[0]) / H, 1e-6);
        CHECK_NEAR(nb[3], (double)(b[1] + sz[1]) / W, 1e-6);
        bool whole = sz[0] == H && sz[1] == W;
        double area = (double)sz[0] * sz[1] / (H * W), ar = (double)sz[1] / sz[0];
        double covered = 0;
        for (int64_t i = 0; i < vg_tensor_num_elements(out[0]); i++) covered += ((const int32_t *)vg_tensor_data(out[0]))[i];
        covered /= obj_area;
        if (area < min_area) min_area = area;
        if (area > max_area) max_area = area;
        if (covered < min_cov) min_cov = covered;
        if (!whole) {
            /* width = round(height * aspect): the ratio is in range up to half a pixel */
            double fuzz = 0.5 / sz[0] + 1e-6;
            CHECK(ar >= c->ar[0] - fuzz && ar <= c->ar[1] + fuzz);
            if (ar < min_ar) min_ar = ar;
            if (ar > max_ar) max_ar = ar;
        }
        if (b[0] != prev_y || b[1] != prev_x) distinct++;
        prev_y = b[0], prev_x = b[1];
        for (int k = 0; k < 4; k++) vg_tensor_free(out[k]);
    }
    /* TF's assertions: areas within area_range, object covered at least min_object_covered */
    CHECK(min_area >= c->area[0] - 1e-6);
    CHECK(max_area <= c->area[1] + 1e-6);
    CHECK(min_cov >= c->min_covered - 1e-6);
    /* it is random: the runs of one session differ */
    CHECK(distinct > c->iters / 4);
    kt_teardown(g, s, (vg_tensor *[]){mcv}, 1, NULL, 0);
}

static void test_whole_image_bounding_box(void) {
    sdbb_case c = {{0, 0, 1, 1}, 0.1f, {0.75f, 1.33f}, {0.05f, 1.0f}, 300};
    run_case(&c, false);
}

static void test_with_bounding_box(void) {
    /* TF: an object at x 2..12, y 3..13 of a 40x50 image, min_object_covered 0.1 */
    sdbb_case c = {{3.0f / H, 2.0f / W, 13.0f / H, 12.0f / W}, 0.1f, {0.75f, 1.33f}, {0.05f, 1.0f}, 300};
    run_case(&c, false);
    /* a stricter coverage, wider ratios, the V2 tensor input */
    sdbb_case c2 = {{0.2f, 0.3f, 0.7f, 0.8f}, 0.7f, {0.5f, 2.0f}, {0.1f, 0.6f}, 200};
    run_case(&c2, true);
    /* min_object_covered 0: any crop that touches a box of >= 1 pixel */
    sdbb_case c3 = {{0.0f, 0.0f, 0.5f, 0.5f}, 0.0f, {0.75f, 1.33f}, {0.05f, 0.3f}, 200};
    run_case(&c3, true);
}

/* Runs the op's three outputs once; returns the code, fills out (caller frees). */
static vg_code run3(vg_graph *g, vg_op *op, vg_tensor **out, vg_status *st) {
    vg_output f[3] = {vg_out(op, 0), vg_out(op, 1), vg_out(op, 2)};
    vg_session *s = vg_session_new(g, NULL, st);
    if (!s) return st->code;
    vg_code c = vg_session_run(s, NULL, NULL, NULL, 0, f, out, 3, NULL, 0, NULL, st);
    vg_session_free(s);
    return c;
}

static vg_op *build(vg_graph *g, const int64_t *size, int nsize, const float *boxes, int nboxes,
                    const vg_sample_distorted_bbox_options *o) {
    double sz[3], bx[64];
    for (int i = 0; i < nsize; i++) sz[i] = (double)size[i];
    for (int i = 0; i < 4 * nboxes; i++) bx[i] = boxes[i];
    vg_output is = cst(g, VG_INT64, (int64_t[]){nsize}, 1, sz);
    vg_output bb = cst(g, VG_FLOAT, (int64_t[]){1, nboxes, 4}, 3, bx);
    return vg_sample_distorted_bounding_box_v2(g, is, bb, (vg_output){NULL, 0}, o, NULL);
}

static void test_shapes_and_no_boxes(void) {
    vg_graph *g = vg_graph_new();
    vg_sample_distorted_bbox_options o = (vg_sample_distorted_bbox_options){0};
    o.use_image_if_no_bounding_boxes = true;
    vg_op *op = build(g, (int64_t[]){H, W, 3}, 3, NULL, 0, &o);
    CHECK(op != NULL);
    /* static shapes: begin, size [3] of image_size's dtype, bboxes [1, 1, 4] float */
    CHECK_EQ_INT(vg_op_num_outputs(op), 3);
    vg_tensor *out[3] = {0};
    vg_status st;
    CHECK_OK(run3(g, op, out, &st), &st);
    if (out[0]) {
        CHECK_EQ_INT(vg_tensor_dtype(out[0]), VG_INT64);
        CHECK_EQ_INT(vg_tensor_dtype(out[2]), VG_FLOAT);
        const int64_t *b = vg_tensor_data(out[0]), *sz = vg_tensor_data(out[1]);
        CHECK(b[0] + sz[0] <= H && b[1] + sz[1] <= W && sz[2] == -1);
        /* the whole image is the object: 10% of it covered */
        CHECK(sz[0] * sz[1] >= 0.1 * H * W - 1e-9);
    }
    for (int k = 0; k < 3; k++) vg_tensor_free(out[k]);
    vg_graph_free(g);
    /* no boxes without use_image_if_no_bounding_boxes */
    g = vg_graph_new();
    op = build(g, (int64_t[]){H, W, 3}, 3, NULL, 0, NULL);
    CHECK_STATUS(run3(g, op, out, &st), &st, VG_INVALID_ARGUMENT, "No bounding boxes provided as input");
    vg_graph_free(g);
}

/* No crop of at most 10% of the image covers the whole-image box fully: every attempt
 * fails and the op returns the whole image. */
static void test_fallback_whole_image(void) {
    vg_graph *g = vg_graph_new();
    vg_sample_distorted_bbox_options o = (vg_sample_distorted_bbox_options){0};
    o.area_range[0] = 0.05f, o.area_range[1] = 0.1f, o.min_object_covered = 1.0f, o.seed = 3;
    vg_op *op = build(g, (int64_t[]){H, W, 1}, 3, (const float[]){0, 0, 1, 1}, 1, &o);
    vg_tensor *out[3] = {0};
    vg_status st;
    CHECK_OK(run3(g, op, out, &st), &st);
    if (out[0]) {
        const int64_t *b = vg_tensor_data(out[0]), *sz = vg_tensor_data(out[1]);
        CHECK(b[0] == 0 && b[1] == 0 && b[2] == 0 && sz[0] == H && sz[1] == W && sz[2] == -1);
        const float *nb = vg_tensor_data(out[2]);
        CHECK(nb[0] == 0 && nb[1] == 0 && nb[2] == 1 && nb[3] == 1);
    }
    for (int k = 0; k < 3; k++) vg_tensor_free(out[k]);
    vg_graph_free(g);
}

/* 20 boxes of one session's consecutive runs, as y, x, h, w. */
static void sequence(int64_t graph_seed, int64_t op_seed, int32_t *seq) {
    vg_graph *g = vg_graph_new();
    vg_graph_set_seed(g, graph_seed);
    vg_sample_distorted_bbox_options o = (vg_sample_distorted_bbox_options){0};
    o.seed = op_seed;
    vg_op *op = build(g, (int64_t[]){100, 120, 3}, 3, (const float[]){0.1f, 0.1f, 0.9f, 0.8f}, 1, &o);
    vg_status st;
    vg_session *s = vg_session_new(g, NULL, &st);
    for (int i = 0; i < 20; i++) {
        vg_output f[2] = {vg_out(op, 0), vg_out(op, 1)};
        vg_tensor *out[2] = {0};
        CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, f, out, 2, NULL, 0, NULL, &st), &st);
        const int64_t *b = out[0] ? vg_tensor_data(out[0]) : NULL, *sz = out[1] ? vg_tensor_data(out[1]) : NULL;
        seq[4 * i] = b ? (int32_t)b[0] : -1, seq[4 * i + 1] = b ? (int32_t)b[1] : -1;
        seq[4 * i + 2] = sz ? (int32_t)sz[0] : -1, seq[4 * i + 3] = sz ? (int32_t)sz[1] : -1;
        vg_tensor_free(out[0]), vg_tensor_free(out[1]);
    }
    vg_session_free(s);
    vg_graph_free(g);
}

static void test_determinism(void) {
    int32_t a[80], b[80], c[80], d[80];
    sequence(7, 11, a);
    sequence(7, 11, b);
    sequence(7, 12, c);
    sequence(8, 11, d);
    CHECK(memcmp(a, b, sizeof a) == 0);  /* same seeds: same boxes, run for run */
    CHECK(memcmp(a, c, sizeof a) != 0);  /* another op seed */
    CHECK(memcmp(a, d, sizeof a) != 0);  /* another graph seed */
}

static void expect_build_error(vg_sample_distorted_bbox_options o, const char *msg) {
    vg_graph *g = vg_graph_new();
    vg_op *op = build(g, (int64_t[]){H, W, 3}, 3, (const float[]){0, 0, 1, 1}, 1, &o);
    CHECK(op == NULL);
    vg_status st;
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, msg);
    vg_graph_free(g);
}

static void test_errors(void) {
    /* TF's defaults spelled out: a field left 0 would read as its default */
    vg_sample_distorted_bbox_options d = {.aspect_ratio_range = {0.75f, 1.33f}, .area_range = {0.05f, 1.0f}}, o;
    o = d, o.area_range[0] = 0, o.area_range[1] = 1.0f;
    expect_build_error(o, "Area range must be non-negative");
    o = d, o.area_range[1] = 1.5f;
    expect_build_error(o, "Area range must be less then or equal to 1.0");
    o = d, o.aspect_ratio_range[0] = -1;  /* with the other bound 1.33 */
    expect_build_error(o, "Aspect ratio range must be non-negative");
    o = d, o.max_attempts = -1;
    expect_build_error(o, "Max attempts must be non-negative");
    /* rank and dtype errors of the shape function */
    vg_graph *g = vg_graph_new();
    vg_output is = cst(g, VG_INT32, (int64_t[]){3}, 1, (double[]){H, W, 3});
    vg_output bad = cst(g, VG_FLOAT, (int64_t[]){1, 4}, 2, (double[]){0, 0, 1, 1});
    CHECK(vg_sample_distorted_bounding_box_v2(g, is, bad, (vg_output){NULL, 0}, NULL, NULL) == NULL);
    vg_status st;
    CHECK_CODE(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
    g = vg_graph_new();
    is = cst(g, VG_FLOAT, (int64_t[]){3}, 1, (double[]){H, W, 3});
    bad = cst(g, VG_FLOAT, (int64_t[]){1, 1, 4}, 3, (double[]){0, 0, 1, 1});
    CHECK(vg_sample_distorted_bounding_box_v2(g, is, bad, (vg_output){NULL, 0}, NULL, NULL) == NULL);
    CHECK_CODE(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
    /* run-time errors */
    vg_tensor *out[3] = {0};
    g = vg_graph_new();
    o = d, o.min_object_covered = -0.1f;
    vg_op *op = build(g, (int64_t[]){H, W, 3}, 3, (const float[]){0, 0, 1, 1}, 1, &o);
    CHECK_STATUS(run3(g, op, out, &st), &st, VG_INVALID_ARGUMENT, "Min object covered must be non-negative");
    vg_graph_free(g);
    g = vg_graph_new();
    op = build(g, (int64_t[]){H, W, 3}, 3, (const float[]){0, 0, 1.5f, 1}, 1, NULL);
    CHECK_STATUS(run3(g, op, out, &st), &st, VG_INVALID_ARGUMENT, "All bounding box coordinates must be in [0.0, 1.0]");
    vg_graph_free(g);
    /* image_size of unknown length, fed with 2 elements */
    g = vg_graph_new();
    vg_output p = vg_placeholder(g, VG_INT32, (int64_t[]){-1}, 1, "image_size");
    bad = cst(g, VG_FLOAT, (int64_t[]){1, 1, 4}, 3, (double[]){0, 0, 1, 1});
    op = vg_sample_distorted_bounding_box_v2(g, p, bad, (vg_output){NULL, 0}, NULL, NULL);
    CHECK(op != NULL);
    vg_tensor *two = mk(VG_INT32, (int64_t[]){2}, 1, (double[]){H, W});
    expect_run_error(g, vg_out(op, 0), &p, &two, 1, VG_INVALID_ARGUMENT, "image_size must contain 3 elements");
    vg_tensor_free(two);
    vg_graph_free(g);
}

/* ---- DrawBoundingBoxes ---- */
static const float TABLE[10][4] = {{1, 1, 0, 1},      {0, 0, 1, 1},      {1, 0, 0, 1},   {0, 1, 0, 1},
                                   {0.5f, 0, 0.5f, 1}, {0.5f, 0.5f, 0, 1}, {0.5f, 0, 0, 1}, {0, 0, 0.5f, 1},
                                   {0, 1, 1, 1},      {1, 0, 1, 1}};

/* draws boxes [1, n, 4] on a zero image [1, h, w, d]; the result (caller frees) */
static vg_tensor *draw(int h, int w, int d, const float *boxes, int n) {
    vg_graph *g = vg_graph_new();
    vg_output im = cst(g, VG_FLOAT, (int64_t[]){1, h, w, d}, 4, NULL);
    double bx[64];
    for (int i = 0; i < 4 * n; i++) bx[i] = boxes[i];
    vg_output b = cst(g, VG_FLOAT, (int64_t[]){1, n, 4}, 3, bx);
    /* cst(NULL) fills 0, 1, 2, ...: multiply by 0 for a black image */
    im = vg_mul(g, im, vg_const_f32(g, 0.f, NULL), NULL);
    vg_tensor *t = run(g, vg_draw_bounding_boxes(g, im, b, NULL));
    vg_graph_free(g);
    return t;
}

/* expects the outline of rows r0..r1, cols c0..c1 (clipped) in colour col, else 0;
 * top / bottom / left / right drawn as flagged */
static void expect_outline(const vg_tensor *t, int h, int w, int d, int r0, int r1, int c0, int c1, const float *col,
                           bool top, bool bottom, bool left, bool right) {
    if (!t) return;
    const float *p = vg_tensor_data(t);
    for (int i = 0; i < h; i++)
        for (int j = 0; j < w; j++) {
            bool in_r = i >= (r0 > 0 ? r0 : 0) && i <= (r1 < h - 1 ? r1 : h - 1);
            bool in_c = j >= (c0 > 0 ? c0 : 0) && j <= (c1 < w - 1 ? c1 : w - 1);
            bool on = ((top && i == r0) || (bottom && i == r1)) && in_c;
            on = on || (((left && j == c0) || (right && j == c1)) && in_r);
            for (int c = 0; c < d; c++) {
                float want = on ? col[c] : 0.f;
                if (p[(i * w + j) * d + c] != want) {
                    fprintf(stderr, "pixel (%d, %d, %d) = %g, want %g\n", i, j, c, p[(i * w + j) * d + c], want);
                    CHECK(0);
                    return;
                }
            }
        }
}

static void test_draw_bounding_boxes(void) {
    /* the whole image: its border, yellow */
    vg_tensor *t = draw(4, 5, 3, (const float[]){0, 0, 1, 1}, 1);
    expect_outline(t, 4, 5, 3, 0, 3, 0, 4, TABLE[0], true, true, true, true);
    vg_tensor_free(t);
    /* colour cycling: n boxes on the border, the last drawn (n - 1) % 10 shows */
    float boxes[48];
    for (int n = 1; n <= 12; n++) {
        for (int k = 0; k < n; k++) boxes[4 * k] = 0, boxes[4 * k + 1] = 0, boxes[4 * k + 2] = 1, boxes[4 * k + 3] = 1;
        t = draw(4, 4, 3, boxes, n);
        expect_outline(t, 4, 4, 3, 0, 3, 0, 3, TABLE[(n - 1) % 10], true, true, true, true);
        vg_tensor_free(t);
        t = draw(4, 4, 4, boxes, n); /* RGBA: alpha 1 */
        expect_outline(t, 4, 4, 4, 0, 3, 0, 3, TABLE[(n - 1) % 10], true, true, true, true);
        vg_tensor_free(t);
        t = draw(4, 4, 1, boxes, n); /* grey: white */
        expect_outline(t, 4, 4, 1, 0, 3, 0, 3, (const float[]){1}, true, true, true, true);
        vg_tensor_free(t);
    }
    /* a partial box: rows floor(0.5 * 4) = 2 .. 4, cols floor(0.25 * 6) = 1 .. floor(0.9 * 6) = 5 */
    t = draw(5, 7, 3, (const float[]){0.5f, 0.25f, 1.0f, 0.9f}, 1);
    expect_outline(t, 5, 7, 3, 2, 4, 1, 5, TABLE[0], true, true, true, true);
    vg_tensor_free(t);
    /* partly above the image: no top line, the sides from row 0 */
    t = draw(5, 5, 3, (const float[]){-0.5f, 0.25f, 0.5f, 0.75f}, 1);
    expect_outline(t, 5, 5, 3, -2, 2, 1, 3, TABLE[0], false, true, true, true);
    vg_tensor_free(t);
    /* inverted: nothing drawn */
    t = draw(5, 5, 3, (const float[]){1, 0, 0, 1}, 1);
    expect_outline(t, 5, 5, 3, 0, 0, 0, 0, TABLE[0], false, false, false, false);
    vg_tensor_free(t);
    /* errors */
    vg_graph *g = vg_graph_new();
    vg_output im = cst(g, VG_FLOAT, (int64_t[]){2, 3, 3, 3}, 4, NULL);
    vg_output b = cst(g, VG_FLOAT, (int64_t[]){1, 1, 4}, 3, (double[]){0, 0, 1, 1});
    expect_run_error(g, vg_draw_bounding_boxes(g, im, b, NULL), NULL, NULL, 0, VG_INVALID_ARGUMENT,
                     "The batch sizes should be the same");
    vg_output im2 = cst(g, VG_FLOAT, (int64_t[]){1, 3, 3, 2}, 4, NULL);
    CHECK(vg_draw_bounding_boxes(g, im2, b, NULL).op == NULL);
    vg_status st;
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT,
        "Channel depth should be either 1 (GRY), 3 (RGB), or 4 (RGBA)");
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_whole_image_bounding_box);
    RUN_TEST(test_with_bounding_box);
    RUN_TEST(test_shapes_and_no_boxes);
    RUN_TEST(test_fallback_whole_image);
    RUN_TEST(test_determinism);
    RUN_TEST(test_errors);
    RUN_TEST(test_draw_bounding_boxes);
    TEST_MAIN_END();
}
