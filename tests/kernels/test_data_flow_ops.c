/* test_data_flow_ops.c - DynamicStitch / ParallelDynamicStitch, translated from TF
 * 1.15's kernel_tests/dynamic_stitch_op_test.py (testSimpleOneDimensional,
 * testSimpleTwoDimensional, testHigherRank-style repeated index, testErrorIndicesMultiDimensional
 * -style shape errors), and the gradient (_DynamicStitchGrads) by finite differences. */
#include "vigil/vigil.h"
#include <stdlib.h>
#include "gradcheck.h"
#include "test_util.h"
#include "kernels_fixture.h"

static vg_output ci32(vg_graph *g, const int32_t *v, int64_t n) {
    vg_status st;
    vg_tensor *t = vg_tensor_new_copy(VG_INT32, &n, 1, v, (size_t)n * 4, &st);
    vg_output o = vg_const(g, t, NULL);
    vg_tensor_free(t);
    return o;
}

static vg_output cf32(vg_graph *g, const float *v, const int64_t *dims, int nd) {
    vg_status st;
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= dims[i];
    vg_tensor *t = vg_tensor_new_copy(VG_FLOAT, dims, nd, v, (size_t)n * 4, &st);
    vg_output o = vg_const(g, t, NULL);
    vg_tensor_free(t);
    return o;
}

static vg_output stitch(vg_graph *g, const char *type, const vg_output *idx, const vg_output *data, int n) {
    vg_op_builder *b = vg_op_builder_new(g, type, NULL);
    vg_op_builder_add_inputs(b, idx, n);
    vg_op_builder_add_inputs(b, data, n);
    return vg_out(vg_op_builder_finish(b), 0);
}

static void test_one_dimensional(void) {
    const char *types[] = {"DynamicStitch", "ParallelDynamicStitch"};
    for (int t = 0; t < 2; t++) {
        vg_graph *g = vg_graph_new();
        vg_status st;
        vg_output idx[2] = {ci32(g, (int32_t[]){0, 4, 7}, 3), ci32(g, (int32_t[]){1, 6, 2, 3, 5}, 5)};
        vg_output data[2] = {cf32(g, (float[]){0, 40, 70}, (int64_t[]){3}, 1),
                             cf32(g, (float[]){10, 60, 20, 30, 50}, (int64_t[]){5}, 1)};
        vg_output y = stitch(g, types[t], idx, data, 2);
        CHECK_OK(vg_graph_status(g, &st), &st);
        vg_shape s = vg_output_shape(y);
        CHECK_EQ_INT(s.ndims, 1);
        CHECK_EQ_INT(s.dims[0], 8); /* constant indices: static shape */
        vg_session *sess = vg_session_new(g, NULL, &st);
        vg_tensor *out = NULL;
        CHECK_OK(vg_session_run1(sess, y, &out, &st), &st);
        if (out) {
            CHECK_EQ_INT(vg_tensor_num_elements(out), 8);
            for (int i = 0; i < 8; i++) CHECK_NEAR(((const float *)vg_tensor_data(out))[i], 10.0 * i, 0);
        }
        vg_tensor_free(out);
        vg_session_free(sess);
        vg_graph_free(g);
    }
}

static void test_two_dimensional_and_repeats(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output idx[3] = {ci32(g, (int32_t[]){0, 4, 7}, 3), ci32(g, (int32_t[]){1, 6}, 2),
                        ci32(g, (int32_t[]){2, 3, 5}, 3)};
    vg_output data[3] = {cf32(g, (float[]){0, 1, 40, 41, 70, 71}, (int64_t[]){3, 2}, 2),
                         cf32(g, (float[]){10, 11, 60, 61}, (int64_t[]){2, 2}, 2),
                         cf32(g, (float[]){20, 21, 30, 31, 50, 51}, (int64_t[]){3, 2}, 2)};
    vg_output y = stitch(g, "DynamicStitch", idx, data, 3);
    /* repeated index: the later data wins (TF: "values[m][i] ... the last one") */
    vg_output ridx[2] = {ci32(g, (int32_t[]){0, 1}, 2), ci32(g, (int32_t[]){1}, 1)};
    vg_output rdata[2] = {cf32(g, (float[]){1, 2}, (int64_t[]){2}, 1), cf32(g, (float[]){9}, (int64_t[]){1}, 1)};
    vg_output r = stitch(g, "DynamicStitch", ridx, rdata, 2);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *sess = vg_session_new(g, NULL, &st);
    vg_tensor *out[2] = {NULL, NULL};
    vg_output f[2] = {y, r};
    CHECK_OK(vg_session_run(sess, NULL, NULL, NULL, 0, f, out, 2, NULL, 0, NULL, &st), &st);
    if (out[0]) {
        CHECK_EQ_INT(vg_tensor_dim(out[0], 0), 8);
        CHECK_EQ_INT(vg_tensor_dim(out[0], 1), 2);
        for (int i = 0; i < 8; i++) {
            CHECK_NEAR(((const float *)vg_tensor_data(out[0]))[2 * i], 10.0 * i, 0);
            CHECK_NEAR(((const float *)vg_tensor_data(out[0]))[2 * i + 1], 10.0 * i + 1, 0);
        }
    }
    if (out[1]) {
        CHECK_NEAR(((const float *)vg_tensor_data(out[1]))[0], 1, 0);
        CHECK_NEAR(((const float *)vg_tensor_data(out[1]))[1], 9, 0);
    }
    kt_teardown(g, sess, (vg_tensor *[]){out[0], out[1]}, 2, NULL, 0);
}

static void test_errors(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    /* data shape not starting with the indices shape: fed, so caught at run time */
    vg_output ip = vg_placeholder(g, VG_INT32, NULL, -1, "ip");
    vg_output dp = vg_placeholder(g, VG_FLOAT, NULL, -1, "dp");
    vg_output y = stitch(g, "DynamicStitch", &ip, &dp, 1);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *sess = vg_session_new(g, NULL, &st);
    int64_t d2[] = {2}, d3[] = {3};
    vg_tensor *iv = vg_tensor_new_copy(VG_INT32, d2, 1, (int32_t[]){0, 1}, 8, &st);
    vg_tensor *dv = vg_tensor_new_copy(VG_FLOAT, d3, 1, (float[]){1, 2, 3}, 12, &st);
    vg_tensor *fv[2] = {iv, dv}, *out = NULL;
    vg_output feeds[2] = {ip, dp};
    CHECK_STATUS(vg_session_run(sess, NULL, feeds, fv, 2, &y, &out, 1, NULL, 0, NULL, &st), &st, VG_INVALID_ARGUMENT,
        "does not start with");
    /* negative index */
    vg_tensor *neg = vg_tensor_new_copy(VG_INT32, d3, 1, (int32_t[]){0, -1, 2}, 12, &st);
    fv[0] = neg;
    CHECK_STATUS(vg_session_run(sess, NULL, feeds, fv, 2, &y, &out, 1, NULL, 0, NULL, &st), &st, VG_INVALID_ARGUMENT,
        "negative");
    vg_tensor_free(neg);
    vg_tensor_free(iv);
    vg_tensor_free(dv);
    vg_session_free(sess);
    /* odd input count */
    vg_op_builder *b = vg_op_builder_new(g, "DynamicStitch", "odd");
    vg_op_builder_add_input(b, ip);
    vg_op_builder_add_input(b, dp);
    vg_op_builder_add_input(b, dp);
    CHECK(vg_op_builder_finish(b) == NULL);
    vg_graph_free(g);
}

/* data_flow_grad._DynamicStitchGrads, checked by central differences. */
static void test_gradient(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output idx[2] = {ci32(g, (int32_t[]){0, 3}, 2), ci32(g, (int32_t[]){2, 1, 4}, 3)};
    vg_output x0 = vg_placeholder(g, VG_DOUBLE, (int64_t[]){2, 2}, 2, "x0");
    vg_output x1 = vg_placeholder(g, VG_DOUBLE, (int64_t[]){3, 2}, 2, "x1");
    vg_output data[2] = {x0, x1};
    vg_output y = stitch(g, "DynamicStitch", idx, data, 2);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_tensor *v0 = vg_tensor_new(VG_DOUBLE, (int64_t[]){2, 2}, 2, &st);
    vg_tensor *v1 = vg_tensor_new(VG_DOUBLE, (int64_t[]){3, 2}, 2, &st);
    for (int i = 0; i < 4; i++) ((double *)vg_tensor_data(v0))[i] = 0.3 * i - 0.5;
    for (int i = 0; i < 6; i++) ((double *)vg_tensor_data(v1))[i] = 1.1 - 0.2 * i;
    vg_tensor *vals[2] = {v0, v1};
    CHECK_EQ_INT(vg_gradcheck(g, data, vals, 2, y, 1e-6, 1e-6), 0);
    kt_teardown(g, NULL, (vg_tensor *[]){v0, v1}, 2, NULL, 0);
}

int main(void) {
    RUN_TEST(test_one_dimensional);
    RUN_TEST(test_two_dimensional_and_repeats);
    RUN_TEST(test_errors);
    RUN_TEST(test_gradient);
    TEST_MAIN_END();
}
