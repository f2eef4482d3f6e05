/* test_layers_dilation.c - dilation_rate > 1 for tf.layers conv1d and separable_conv2d
 * (TF 1.15's _WithSpaceToBatch: SpaceToBatchND, the op VALID, BatchToSpaceND), SAME and
 * VALID, against direct dilated convolutions computed here; gradients by finite
 * differences; conv2d_transpose's missing dilation_rate argument. */
#include "gradcheck.h"
#include "test_util.h"
#include "kernels_fixture.h"
#include "status_fixture.h"
#include "session_test_util.h"
#include "vigil/vigil.h"

static vg_tensor *filled(const int64_t *dims, int nd, int mul, int mod) {
    vg_status st;
    vg_tensor *t = vg_tensor_new(VG_DOUBLE, dims, nd, &st);
    for (int64_t i = 0; i < vg_tensor_num_elements(t); i++)
        ((double *)vg_tensor_data(t))[i] = (double)((i * mul) % mod) - mod / 2;
    return t;
}

/* Initialises g's variables in a new session (returned; the caller frees it), then feeds xv
 * to x and fetches the three outputs f (the layer's output and two variables) into o. */
static vg_session *init_and_run3(vg_graph *g, vg_output x, vg_tensor *xv, const vg_output f[3], vg_tensor *o[3]) {
    vg_status st;
    vg_op *init = vg_global_variables_initializer(g);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    for (int i = 0; i < 3; i++) o[i] = NULL;
    CHECK_OK(vg_session_run(s, NULL, &x, &xv, 1, f, o, 3, NULL, 0, NULL, &st), &st);
    return s;
}

static void test_dilated_conv1d(void) {
    for (int same = 0; same < 2; same++) {
        vg_status st;
        vg_graph *g = vg_graph_new();
        vg_output x = vg_placeholder(g, VG_DOUBLE, (int64_t[]){2, 7, 2}, 3, "x");
        vg_layer_config c = {.kind = VG_LAYER_CONV1D};
        c.units = 2;
        c.kernel_size[0] = 3;
        c.dilation_rate[0] = 2;
        c.padding = same ? "same" : "valid";
        c.bias_initializer = vg_init_constant(0.25);
        vg_layer *l = vg_layer_new(&c);
        vg_output y = vg_layer_apply(l, g, x, (vg_output){0});
        CHECK_OK(vg_graph_status(g, &st), &st);
        CHECK(has_op(g, "conv1d/SpaceToBatchND", "SpaceToBatchND"));
        CHECK(has_op(g, "conv1d/conv1d/Conv2D", "Conv2D"));
        CHECK(has_op(g, "conv1d/BatchToSpaceND", "BatchToSpaceND"));
        int ow = same ? 7 : 3, pl = same ? 2 : 0; /* dilated kernel 5 */
        vg_shape ys = vg_output_shape(y);
        CHECK(ys.ndims == 3 && ys.dims[1] == ow && ys.dims[2] == 2);
        vg_tensor *o[3], *xv = filled((int64_t[]){2, 7, 2}, 3, 7, 11);
        vg_session *s = init_and_run3(g, x, xv, (vg_output[]){y, l->kernel.read, l->bias.read}, o);
        if (o[0]) {
            const double *xd = vg_tensor_data(xv), *k = vg_tensor_data(o[1]), *b = vg_tensor_data(o[2]);
            const double *yd = vg_tensor_data(o[0]);
            for (int n = 0; n < 2; n++)
                for (int ox = 0; ox < ow; ox++)
                    for (int fo = 0; fo < 2; fo++) {
                        double want = b[fo];
                        for (int kx = 0; kx < 3; kx++)
                            for (int ci = 0; ci < 2; ci++) {
                                int ix = ox + 2 * kx - pl;
                                if (ix >= 0 && ix < 7) want += xd[(n * 7 + ix) * 2 + ci] * k[(kx * 2 + ci) * 2 + fo];
                            }
                        CHECK_NEAR(yd[(n * ow + ox) * 2 + fo], want, 1e-9);
                    }
        }
        vg_tensor *kv = o[1];
        vg_tensor_free(o[0]);
        vg_tensor_free(o[2]);
        vg_session_free(s);
        /* the bias is fed as well (its variable is not initialised in gradcheck's session) */
        vg_output kb[2] = {l->kernel.read, l->bias.read};
        vg_tensor *bv = filled((int64_t[]){2}, 1, 1, 3);
        vg_tensor *kbv[2] = {kv, bv};
        vg_output xb[2] = {x, l->bias.read};
        vg_tensor *xbv[2] = {xv, bv};
        CHECK_EQ_INT(vg_gradcheck_ex(g, &x, &xv, 1, kb, kbv, 2, y, 1e-6, 1e-6), 0);
        CHECK_EQ_INT(vg_gradcheck_ex(g, kb, kbv, 1, xb, xbv, 2, y, 1e-6, 1e-6), 0);
        vg_tensor_free(bv);
        vg_tensor_free(kv);
        vg_tensor_free(xv);
        vg_layer_free(l);
        vg_graph_free(g);
    }
}

static void test_dilated_separable_conv2d(void) {
    for (int same = 0; same < 2; same++) {
        vg_status st;
        vg_graph *g = vg_graph_new();
        vg_output x = vg_placeholder(g, VG_DOUBLE, (int64_t[]){1, 5, 6, 2}, 4, "x");
        vg_layer *l = dilated_2x2_layer(VG_LAYER_SEPARABLE_CONV2D, 3, same);
        vg_output y = vg_layer_apply(l, g, x, (vg_output){0});
        CHECK_OK(vg_graph_status(g, &st), &st);
        CHECK(has_op(g, "separable_conv2d/separable_conv2d/SpaceToBatchND", "SpaceToBatchND"));
        CHECK(has_op(g, "separable_conv2d/separable_conv2d/depthwise", "DepthwiseConv2dNative"));
        CHECK(has_op(g, "separable_conv2d/separable_conv2d/BatchToSpaceND", "BatchToSpaceND"));
        /* the pointwise Conv2D (named after the scope) consumes BatchToSpaceND */
        CHECK(y.op && strcmp(vg_op_type(y.op), "Conv2D") == 0 &&
              strcmp(vg_op_type(vg_op_input(y.op, 0).op), "BatchToSpaceND") == 0);
        int oh = same ? 5 : 3, ow = same ? 6 : 4, pt = same ? 1 : 0, pl = same ? 1 : 0; /* dilated k = 3 */
        vg_shape ys = vg_output_shape(y);
        CHECK(ys.ndims == 4 && ys.dims[1] == oh && ys.dims[2] == ow && ys.dims[3] == 3);
        vg_tensor *o[3], *xv = filled((int64_t[]){1, 5, 6, 2}, 4, 5, 13);
        vg_session *s = init_and_run3(g, x, xv, (vg_output[]){y, l->depthwise_kernel.read, l->pointwise_kernel.read}, o);
        if (o[0]) {
            const double *xd = vg_tensor_data(xv), *dk = vg_tensor_data(o[1]), *pk = vg_tensor_data(o[2]);
            const double *yd = vg_tensor_data(o[0]);
            for (int oy = 0; oy < oh; oy++)
                for (int ox = 0; ox < ow; ox++) {
                    double d[2] = {0, 0};
                    for (int ci = 0; ci < 2; ci++)
                        for (int ky = 0; ky < 2; ky++)
                            for (int kx = 0; kx < 2; kx++) {
                                int iy = oy + 2 * ky - pt, ix = ox + 2 * kx - pl;
                                if (iy >= 0 && iy < 5 && ix >= 0 && ix < 6)
                                    d[ci] += xd[(iy * 6 + ix) * 2 + ci] * dk[(ky * 2 + kx) * 2 + ci];
                            }
                    for (int fo = 0; fo < 3; fo++)
                        CHECK_NEAR(yd[(oy * ow + ox) * 3 + fo], d[0] * pk[fo] + d[1] * pk[3 + fo], 1e-9);
                }
        }
        vg_session_free(s);
        vg_output ks[2] = {l->depthwise_kernel.read, l->pointwise_kernel.read};
        vg_tensor *kv[2] = {o[1], o[2]};
        CHECK_EQ_INT(vg_gradcheck_ex(g, &x, &xv, 1, ks, kv, 2, y, 1e-6, 1e-6), 0);
        CHECK_EQ_INT(vg_gradcheck_ex(g, ks, kv, 2, &x, &xv, 1, y, 1e-6, 1e-6), 0);
        for (int i = 0; i < 3; i++) vg_tensor_free(o[i]);
        vg_tensor_free(xv);
        vg_layer_free(l);
        vg_graph_free(g);
    }
}

static void test_dilation_errors(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){1, 5, 6, 2}, 4, "x");
    vg_layer_config c = {.kind = VG_LAYER_CONV2D_TRANSPOSE};
    c.units = 3;
    c.kernel_size[0] = c.kernel_size[1] = 2;
    c.dilation_rate[0] = 2;
    c.name = "deconv";
    vg_output y = vg_layers_apply(g, &c, x, (vg_output){0});
    CHECK(y.op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "deconv");
    CHECK_STR_CONTAINS(st.msg, "dilation_rate");
    vg_graph_free(g);
    /* dilation with strides > 1 on conv1d: TF's error */
    g = vg_graph_new();
    vg_output x1 = vg_placeholder(g, VG_FLOAT, (int64_t[]){1, 9, 2}, 3, "x");
    vg_layer_config c1 = {.kind = VG_LAYER_CONV1D};
    c1.units = 1;
    c1.kernel_size[0] = 3;
    c1.strides[0] = 2;
    c1.dilation_rate[0] = 2;
    y = vg_layers_apply(g, &c1, x1, (vg_output){0});
    CHECK(y.op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "strides > 1 not supported in conjunction with dilation_rate > 1");
    vg_graph_free(g);
}

int main(void) {
    (void)vg_gradcheck;
    RUN_TEST(test_dilated_conv1d);
    RUN_TEST(test_dilated_separable_conv2d);
    RUN_TEST(test_dilation_errors);
    TEST_MAIN_END();
}
