/* test_slim.c - TF-slim (vigil/slim.h): arg_scope (TF 1.15
 * contrib/framework/python/ops/arg_scope_test.py), the slim layers' names, shapes and
 * collections (contrib/layers/python/layers/layers_test.py), a MobileNet v1 block's
 * variable list (tensorflow/models research/slim/nets/mobilenet_v1.py), and a conv +
 * batch_norm forward computed by hand. */
#include "test_util.h"
#include "status_fixture.h"
#include "vigil/vigil.h"

static vg_graph *G;

static int nvars(const char *scope) { return vg_slim_get_variables(G, scope, NULL, 0); }

static bool has_var(const char *name) {
    vg_output v[256];
    int n = vg_slim_get_variables(G, NULL, v, 256);
    for (int i = 0; i < n && i < 256; i++)
        if (strcmp(vg_op_name(v[i].op), name) == 0) return true;
    return false;
}

static vg_shape var_shape(const char *name) {
    vg_op *op = vg_graph_op_by_name(G, name);
    vg_shape s = {0};
    if (op) s = vg_output_shape(vg_out(op, 0));
    return s;
}

static void check_shape(vg_shape s, const int64_t *d, int n, int line) {
    bool ok = s.ndims == n;
    for (int i = 0; ok && i < n; i++) ok = s.dims[i] == d[i];
    if (!ok) {
        fprintf(stderr, "%s:%d: shape mismatch (rank %d)\n", __FILE__, line, s.ndims);
        vg_test_failures++;
    }
}
#define CHECK_SHAPE(s, ...) \
    check_shape((s), (int64_t[]){__VA_ARGS__}, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), __LINE__)

static vg_output images(int n, int h, int w, int c) {
    return vg_random_uniform(G, vg_const_i32_vec(G, (int32_t[]){n, h, w, c}, 4, NULL), VG_FLOAT, 1, 0, NULL);
}

static void fresh(void) {
    if (G) vg_graph_free(G);
    G = vg_graph_new();
}

static int coll_size(const char *key) {
    int n = 0;
    vg_graph_collection(G, key, &n);
    return n;
}

static const char *coll_name(const char *key, int i) {
    int n = 0;
    const vg_output *v = vg_graph_collection(G, key, &n);
    return i < n && v[i].op ? vg_op_name(v[i].op) : "";
}

/* ---- arg_scope_test.py ---------------------------------------------------- */

static void test_arg_scope(void) {
    fresh();
    /* testEmptyArgScope */
    CHECK_EQ_INT(vg_slim_arg_scope_depth(G), 0);
    vg_slim_args r = vg_slim_resolve_args(G, "func1", NULL);
    CHECK_EQ_INT(r.stride[0], 0);
    /* testCurrentArgScope / testSimpleArgScope: arg_scope([func1], a=1, b=None, c=[1]) */
    CHECK_EQ_INT(vg_slim_add_arg_scope(G, "func1"), VG_OK);
    CHECK_EQ_INT(vg_slim_add_arg_scope(G, "func2"), VG_OK);
    vg_slim_args outer = {.stride = {1, 1}, .padding = "VALID"};
    CHECK_EQ_INT(vg_slim_arg_scope_push(G, (const char *[]){"func1"}, 1, &outer), VG_OK);
    r = vg_slim_resolve_args(G, "func1", NULL);
    CHECK_EQ_INT(r.stride[0], 1);
    CHECK(r.padding && strcmp(r.padding, "VALID") == 0);
    r = vg_slim_resolve_args(G, "func2", NULL); /* not listed */
    CHECK(r.padding == NULL);
    /* testNestedArgScope: the inner scope overrides b, adds d; a, c stay */
    vg_slim_args inner = {.padding = "SAME", .depth_multiplier = 2};
    CHECK_EQ_INT(vg_slim_arg_scope_push(G, (const char *[]){"func1"}, 1, &inner), VG_OK);
    r = vg_slim_resolve_args(G, "func1", NULL);
    CHECK(strcmp(r.padding, "SAME") == 0);
    CHECK_EQ_INT(r.stride[0], 1);
    CHECK_EQ_INT(r.depth_multiplier, 2);
    /* testOverwriteArgScope: func1(0, b=2): the call wins */
    r = vg_slim_resolve_args(G, "func1", &(vg_slim_args){.depth_multiplier = 3});
    CHECK_EQ_INT(r.depth_multiplier, 3);
    CHECK(strcmp(r.padding, "SAME") == 0);
    CHECK_EQ_INT(vg_slim_arg_scope_depth(G), 2);
    vg_slim_arg_scope_pop(G);
    r = vg_slim_resolve_args(G, "func1", NULL);
    CHECK(strcmp(r.padding, "VALID") == 0);
    CHECK_EQ_INT(r.depth_multiplier, 0);
    vg_slim_arg_scope_pop(G);
    CHECK_EQ_INT(vg_slim_arg_scope_depth(G), 0);
    /* testSharedArgScope: arg_scope([func1, func2], a=1, b=None, c=[1]) */
    vg_slim_args shared = {.keep_prob = 0.8};
    CHECK_EQ_INT(vg_slim_arg_scope_push(G, (const char *[]){"func1", "func2"}, 2, &shared), VG_OK);
    CHECK_NEAR(vg_slim_resolve_args(G, "func1", NULL).keep_prob, 0.8, 0);
    CHECK_NEAR(vg_slim_resolve_args(G, "func2", NULL).keep_prob, 0.8, 0);
    vg_slim_arg_scope_pop(G);
    /* one Python argument in two fields: a call's is_training=False beats a scope's tensor */
    vg_slim_args tscope = {.is_training_tensor = vg_placeholder(G, VG_BOOL, NULL, 0, "t")};
    CHECK_EQ_INT(vg_slim_arg_scope_push(G, (const char *[]){"func1"}, 1, &tscope), VG_OK);
    r = vg_slim_resolve_args(G, "func1", &(vg_slim_args){.is_training = VG_SLIM_FALSE});
    CHECK(r.is_training == VG_SLIM_FALSE && r.is_training_tensor.op == NULL);
    r = vg_slim_resolve_args(G, "func1", NULL);
    CHECK(r.is_training_tensor.op == tscope.is_training_tensor.op);
    vg_slim_arg_scope_pop(G);
    /* testNotDecorated: ValueError "... is not decorated with @add_arg_scope" */
    CHECK_EQ_INT(vg_slim_arg_scope_push(G, (const char *[]){"func3"}, 1, &shared), VG_INVALID_ARGUMENT);
    vg_status st;
    vg_graph_status(G, &st);
    CHECK_STR_CONTAINS(st.msg, "func3 is not decorated with @add_arg_scope");
    CHECK_EQ_INT(vg_slim_arg_scope_depth(G), 0);
}

/* arg_scope_test.py testReuseArgScope / testReuseArgScopeNested: a captured scope
 * entered later holds what was open when it was captured, and replaces the open ones */
static void test_arg_scope_capture(void) {
    fresh();
    vg_slim_add_arg_scope(G, "func1");
    vg_slim_add_arg_scope(G, "func2");
    static const vg_slim_args f1 = {.stride = {1, 1}, .padding = "VALID"}, f2 = {.depth_multiplier = 2};
    vg_slim_arg_scope_push(G, (const char *[]){"func1"}, 1, &f1);
    vg_slim_arg_scope *scope1 = vg_slim_current_arg_scope(G);
    vg_slim_arg_scope_push(G, (const char *[]){"func2"}, 1, &f2);
    vg_slim_arg_scope *scope2 = vg_slim_current_arg_scope(G);
    vg_slim_arg_scope_pop_to(G, 0);
    CHECK_EQ_INT(vg_slim_arg_scope_depth(G), 0);
    CHECK(scope1 && scope2);
    /* with arg_scope(scope1): func1's args, nothing for func2 */
    CHECK_EQ_INT(vg_slim_arg_scope_enter(G, scope1), VG_OK);
    vg_slim_args r = vg_slim_resolve_args(G, "func1", NULL);
    CHECK(r.padding && strcmp(r.padding, "VALID") == 0 && r.stride[0] == 1);
    CHECK_EQ_INT(vg_slim_resolve_args(G, "func2", NULL).depth_multiplier, 0);
    vg_slim_arg_scope_pop(G);
    /* with arg_scope(scope2): both */
    CHECK_EQ_INT(vg_slim_arg_scope_enter(G, scope2), VG_OK);
    CHECK(strcmp(vg_slim_resolve_args(G, "func1", NULL).padding, "VALID") == 0);
    CHECK_EQ_INT(vg_slim_resolve_args(G, "func2", NULL).depth_multiplier, 2);
    /* a scope pushed inside merges over it */
    vg_slim_arg_scope_push(G, (const char *[]){"func2"}, 1, &(vg_slim_args){.depth_multiplier = 3});
    CHECK_EQ_INT(vg_slim_resolve_args(G, "func2", NULL).depth_multiplier, 3);
    vg_slim_arg_scope_pop(G);
    vg_slim_arg_scope_pop(G);
    /* entering replaces: an open scope for func2 is not seen inside arg_scope(scope1) */
    vg_slim_arg_scope_push(G, (const char *[]){"func2"}, 1, &f2);
    vg_slim_arg_scope_enter(G, scope1);
    CHECK_EQ_INT(vg_slim_resolve_args(G, "func2", NULL).depth_multiplier, 0);
    /* a capture of a scope that holds an entered one */
    vg_slim_arg_scope *scope3 = vg_slim_current_arg_scope(G);
    vg_slim_arg_scope_pop_to(G, 0);
    vg_slim_arg_scope_enter(G, scope3);
    CHECK(strcmp(vg_slim_resolve_args(G, "func1", NULL).padding, "VALID") == 0);
    CHECK_EQ_INT(vg_slim_resolve_args(G, "func2", NULL).depth_multiplier, 0);
    vg_slim_arg_scope_pop(G);
    vg_slim_arg_scope_free(scope1);
    vg_slim_arg_scope_free(scope2);
    vg_slim_arg_scope_free(scope3);
    CHECK_EQ_INT(vg_slim_arg_scope_enter(G, NULL), VG_INVALID_ARGUMENT);
}

/* ---- layers_test.py: Convolution2DTest ------------------------------------ */

static void test_conv2d(void) {
    fresh();
    /* testCreateConv: (5, 3, 3, 4) -> 'Conv/Relu', [5, 3, 3, 32]; weights [3, 3, 4, 32] */
    vg_output out = vg_slim_conv2d(G, images(5, 3, 3, 4), 32, 3, 3, NULL, NULL);
    CHECK(out.op && strcmp(vg_op_name(out.op), "Conv/Relu") == 0);
    CHECK_SHAPE(vg_output_shape(out), 5, 3, 3, 32);
    CHECK_SHAPE(var_shape("Conv/weights"), 3, 3, 4, 32);
    CHECK_SHAPE(var_shape("Conv/biases"), 32);
    CHECK(vg_graph_op_by_name(G, "Conv/Conv2D") && vg_graph_op_by_name(G, "Conv/BiasAdd"));
    /* model variables and global variables */
    CHECK_EQ_INT(vg_slim_get_model_variables(G, "Conv", NULL, 0), 2);
    CHECK_EQ_INT(coll_size(VG_TRAINABLE_VARIABLES), 2);
    /* testCreateConvWithStride: (5, 6, 8, 4), stride 2 -> [5, 3, 4, 32] */
    out = vg_slim_conv2d(G, images(5, 6, 8, 4), 32, 3, 3, NULL, &(vg_slim_args){.stride = {2}});
    CHECK(strcmp(vg_op_name(out.op), "Conv_1/Relu") == 0);
    CHECK_SHAPE(vg_output_shape(out), 5, 3, 4, 32);
    /* testCreateConvCreatesWeightsAndBiasesVars, testWithScope */
    out = vg_slim_conv2d(G, images(5, 3, 3, 3), 32, 3, 3, "conv1", NULL);
    CHECK(has_var("conv1/weights") && has_var("conv1/biases"));
    CHECK(strcmp(vg_op_name(out.op), "conv1/Relu") == 0);
    /* testCreateConvWithoutActivation */
    out = vg_slim_conv2d(G, images(5, 3, 3, 3), 32, 3, 3, NULL, &(vg_slim_args){.activation_fn = VG_SLIM_LINEAR});
    CHECK(strcmp(vg_op_name(out.op), "Conv_2/BiasAdd") == 0);
    /* testCreateConvValid: VALID -> [5, 1, 1, 32] */
    out = vg_slim_conv2d(G, images(5, 3, 3, 4), 32, 3, 3, NULL, &(vg_slim_args){.padding = "VALID"});
    CHECK_SHAPE(vg_output_shape(out), 5, 1, 1, 32);
    /* testOutputSizeWithRateTwoSamePadding / ValidPadding / RateTwoThreeValidPadding */
    out = vg_slim_conv2d(G, images(5, 10, 12, 3), 32, 3, 3, NULL, &(vg_slim_args){.rate = {2, 2}});
    CHECK_SHAPE(vg_output_shape(out), 5, 10, 12, 32);
    out = vg_slim_conv2d(G, images(5, 10, 12, 3), 32, 3, 3, NULL, &(vg_slim_args){.rate = {2}, .padding = "VALID"});
    CHECK_SHAPE(vg_output_shape(out), 5, 6, 8, 32);
    out = vg_slim_conv2d(G, images(5, 10, 12, 3), 32, 3, 3, NULL,
                         &(vg_slim_args){.rate = {2, 3}, .padding = "VALID"});
    CHECK_SHAPE(vg_output_shape(out), 5, 6, 6, 32);
    CHECK_EQ_INT(vg_graph_status(G, NULL), VG_OK);
    /* rate > 1 with stride > 1 */
    out = vg_slim_conv2d(G, images(5, 10, 12, 3), 32, 3, 3, NULL, &(vg_slim_args){.rate = {2}, .stride = {2}});
    CHECK(out.op == NULL);
    EXPECT_GRAPH_ERROR(G, VG_INVALID_ARGUMENT, "rate > 1");

    /* testReuseVars: twice with scope 'conv1', reuse=True: 2 variables */
    fresh();
    vg_slim_conv2d(G, images(5, 7, 9, 3), 32, 3, 3, "conv1", NULL);
    CHECK_EQ_INT(nvars(NULL), 2);
    vg_slim_conv2d(G, images(5, 7, 9, 3), 32, 3, 3, "conv1", &(vg_slim_args){.reuse = VG_REUSE_TRUE});
    CHECK_EQ_INT(nvars(NULL), 2);
    /* testNonReuseVars: twice without scope: 4 */
    vg_slim_conv2d(G, images(5, 7, 9, 3), 32, 3, 3, NULL, NULL);
    vg_slim_conv2d(G, images(5, 7, 9, 3), 32, 3, 3, NULL, NULL);
    CHECK_EQ_INT(nvars(NULL), 6);
    CHECK_EQ_INT(vg_graph_status(G, NULL), VG_OK);
}

/* testCreateConvWithWD: the loss is 'Conv/kernel/Regularizer/l2_regularizer' = 0.01 *
 * l2_loss(weights); testCreateConvNoRegularizers; testReuseConvWithWD (still one) */
static void test_conv2d_wd(void) {
    fresh();
    vg_output x = images(5, 7, 9, 3);
    vg_slim_conv2d(G, x, 32, 3, 3, NULL, NULL);
    CHECK_EQ_INT(coll_size(VG_REGULARIZATION_LOSSES), 0);
    fresh();
    x = images(5, 7, 9, 3);
    vg_slim_args a = {.weights_regularizer = vg_regularizer_l2(0.01)};
    vg_slim_conv2d(G, x, 32, 3, 3, "Conv", &a);
    CHECK_EQ_INT(coll_size(VG_REGULARIZATION_LOSSES), 1);
    CHECK(strcmp(coll_name(VG_REGULARIZATION_LOSSES, 0), "Conv/kernel/Regularizer/l2_regularizer") == 0);
    a.reuse = VG_REUSE_TRUE;
    vg_slim_conv2d(G, x, 32, 3, 3, "Conv", &a);
    CHECK_EQ_INT(coll_size(VG_REGULARIZATION_LOSSES), 1);
    int n = 0;
    vg_output wd = vg_graph_collection(G, VG_REGULARIZATION_LOSSES, &n)[0];
    vg_op *w = vg_graph_op_by_name(G, "Conv/weights");
    vg_output l2 = vg_reduce_sum(G, vg_square(G, vg_variable_snapshot(w), NULL), NULL, -1, false, NULL);
    vg_session *s = vg_session_new(G, NULL, NULL);
    vg_status st;
    CHECK_OK(vg_session_run_targets(s, (vg_op *[]){vg_global_variables_initializer(G)}, 1, &st), &st);
    vg_tensor *o[2] = {NULL, NULL};
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, (vg_output[]){wd, l2}, o, 2, NULL, 0, NULL, &st), &st);
    if (o[0] && o[1])
        CHECK_NEAR(((float *)vg_tensor_data(o[0]))[0], 0.01 * 0.5 * ((float *)vg_tensor_data(o[1]))[0], 1e-5);
    vg_tensor_free(o[0]);
    vg_tensor_free(o[1]);
    vg_session_free(s);
}

/* testConvWithBatchNorm: arg_scope([conv2d], normalizer_fn=batch_norm,
 * normalizer_params={'decay': 0.9}), two convs: 8 variables, 3 under each BatchNorm;
 * testReuseConvWithBatchNorm: the second with scope 'Conv' and reuse: 4 */
static void test_conv2d_batch_norm(void) {
    fresh();
    vg_slim_args bn = {.decay = 0.9};
    vg_slim_args sc = {.normalizer_fn = VG_SLIM_BATCH_NORM, .normalizer_params = &bn};
    CHECK_EQ_INT(vg_slim_arg_scope_push(G, (const char *[]){VG_SLIM_CONV2D}, 1, &sc), VG_OK);
    vg_output net = vg_slim_conv2d(G, images(5, 32, 32, 3), 32, 3, 3, NULL, NULL);
    net = vg_slim_conv2d(G, net, 32, 3, 3, NULL, NULL);
    CHECK_EQ_INT(nvars(NULL), 8);
    CHECK_EQ_INT(nvars("Conv/BatchNorm"), 3);
    CHECK_EQ_INT(nvars("Conv_1/BatchNorm"), 3);
    CHECK(has_var("Conv/BatchNorm/beta") && has_var("Conv/BatchNorm/moving_mean") &&
          has_var("Conv/BatchNorm/moving_variance") && !has_var("Conv/biases"));
    CHECK(strcmp(vg_op_name(net.op), "Conv_1/Relu") == 0);
    vg_slim_arg_scope_pop(G);

    fresh();
    CHECK_EQ_INT(vg_slim_arg_scope_push(G, (const char *[]){VG_SLIM_CONV2D}, 1, &sc), VG_OK);
    net = vg_slim_conv2d(G, images(5, 32, 32, 32), 32, 3, 3, "Conv", NULL);
    net = vg_slim_conv2d(G, net, 32, 3, 3, "Conv", &(vg_slim_args){.reuse = VG_REUSE_TRUE});
    CHECK_EQ_INT(nvars(NULL), 4);
    CHECK_EQ_INT(vg_graph_status(G, NULL), VG_OK);
    vg_slim_arg_scope_pop(G);
}

/* ---- SeparableConv2dTest --------------------------------------------------- */

static void test_separable_conv2d(void) {
    fresh();
    /* testCreateConvFloat32: separable_conv2d(images, 2, [3, 3], 2) */
    vg_output out = vg_slim_separable_conv2d(G, images(5, 3, 3, 3), 2, 3, 3, NULL,
                                             &(vg_slim_args){.depth_multiplier = 2});
    CHECK(strcmp(vg_op_name(out.op), "SeparableConv2d/Relu") == 0);
    CHECK_SHAPE(vg_output_shape(out), 5, 3, 3, 2);
    CHECK_SHAPE(var_shape("SeparableConv2d/depthwise_weights"), 3, 3, 3, 2);
    CHECK_SHAPE(var_shape("SeparableConv2d/pointwise_weights"), 1, 1, 6, 2);
    CHECK(vg_graph_op_by_name(G, "SeparableConv2d/separable_conv2d/depthwise"));
    vg_op *pw = vg_graph_op_by_name(G, "SeparableConv2d/separable_conv2d"); /* the pointwise 1x1 */
    CHECK(pw && strcmp(vg_op_type(pw), "Conv2D") == 0);
    /* testCreateDepthwiseWithoutPointwiseConv: num_outputs None -> [5, 3, 3, 6] */
    out = vg_slim_separable_conv2d(G, images(5, 3, 3, 3), 0, 3, 3, NULL, &(vg_slim_args){.depth_multiplier = 2});
    CHECK_SHAPE(vg_output_shape(out), 5, 3, 3, 6);
    CHECK(vg_graph_op_by_name(G, "SeparableConv2d_1/depthwise"));
    /* testCreateConvCreatesWeightsAndBiasesVars: (32, [3, 3], 4, scope='conv1') */
    vg_slim_separable_conv2d(G, images(5, 3, 3, 3), 32, 3, 3, "conv1", &(vg_slim_args){.depth_multiplier = 4});
    CHECK(has_var("conv1/depthwise_weights") && has_var("conv1/pointwise_weights") && has_var("conv1/biases"));
    /* testCreateDepthwiseConvCreatesWeightsAndBiasesVars: no pointwise */
    vg_slim_separable_conv2d(G, images(5, 3, 3, 3), 0, 3, 3, "conv2", &(vg_slim_args){.depth_multiplier = 4});
    CHECK(has_var("conv2/depthwise_weights") && has_var("conv2/biases") && !has_var("conv2/pointwise_weights"));
    /* testCreateConvWithoutActivation, testCreateConvValid, testCreateAtrousConvValid */
    out = vg_slim_separable_conv2d(G, images(5, 3, 3, 3), 32, 3, 3, NULL,
                                   &(vg_slim_args){.activation_fn = VG_SLIM_LINEAR});
    CHECK(strcmp(vg_op_name(out.op), "SeparableConv2d_2/BiasAdd") == 0);
    out = vg_slim_separable_conv2d(G, images(5, 3, 3, 3), 32, 3, 3, NULL, &(vg_slim_args){.padding = "VALID"});
    CHECK_SHAPE(vg_output_shape(out), 5, 1, 1, 32);
    out = vg_slim_separable_conv2d(G, images(5, 5, 5, 3), 32, 3, 3, NULL,
                                   &(vg_slim_args){.padding = "VALID", .rate = {2}});
    CHECK_SHAPE(vg_output_shape(out), 5, 1, 1, 32);
    CHECK(vg_graph_op_by_name(G, "SeparableConv2d_4/separable_conv2d/SpaceToBatchND") &&
          vg_graph_op_by_name(G, "SeparableConv2d_4/separable_conv2d/BatchToSpaceND") &&
          vg_graph_op_by_name(G, "SeparableConv2d_4/separable_conv2d"));
    CHECK_EQ_INT(vg_graph_status(G, NULL), VG_OK);
    /* testCreateConvWithWeightDecay: two losses, depthwise_kernel then pointwise_kernel */
    fresh();
    vg_slim_separable_conv2d(G, images(5, 3, 3, 3), 32, 3, 3, NULL,
                             &(vg_slim_args){.depth_multiplier = 2, .weights_regularizer = vg_regularizer_l2(0.01)});
    CHECK_EQ_INT(coll_size(VG_REGULARIZATION_LOSSES), 2);
    CHECK(strcmp(coll_name(VG_REGULARIZATION_LOSSES, 0), "SeparableConv2d/depthwise_kernel/Regularizer/l2_regularizer") ==
          0);
    CHECK(strcmp(coll_name(VG_REGULARIZATION_LOSSES, 1), "SeparableConv2d/pointwise_kernel/Regularizer/l2_regularizer") ==
          0);
}

/* ---- FCTest ---------------------------------------------------------------- */

static void test_fully_connected(void) {
    fresh();
    vg_output in = vg_random_uniform(G, vg_const_i32_vec(G, (int32_t[]){5, 27}, 2, NULL), VG_FLOAT, 1, 0, NULL);
    /* testCreateFC: 'fully_connected/Relu', [5, 32]; weights [27, 32], biases [32] */
    vg_output out = vg_slim_fully_connected(G, in, 32, NULL, NULL);
    CHECK(strcmp(vg_op_name(out.op), "fully_connected/Relu") == 0);
    CHECK_SHAPE(vg_output_shape(out), 5, 32);
    CHECK_SHAPE(var_shape("fully_connected/weights"), 27, 32);
    CHECK_SHAPE(var_shape("fully_connected/biases"), 32);
    /* testCreateFCWithScope, testCreateFcCreatesWeightsAndBiasesVars */
    out = vg_slim_fully_connected(G, in, 32, "fc1", NULL);
    CHECK(strcmp(vg_op_name(out.op), "fc1/Relu") == 0);
    CHECK(has_var("fc1/weights") && has_var("fc1/biases"));
    /* testCreateFCWithoutActivation */
    out = vg_slim_fully_connected(G, in, 32, NULL, &(vg_slim_args){.activation_fn = VG_SLIM_LINEAR});
    CHECK(strcmp(vg_op_name(out.op), "fully_connected_1/BiasAdd") == 0);
    /* testCreateFCWithWD / testCreateFCWithBD */
    vg_slim_fully_connected(G, in, 32, "fcwd", &(vg_slim_args){.weights_regularizer = vg_regularizer_l2(0.01),
                                                               .biases_regularizer = vg_regularizer_l2(0.01)});
    CHECK_EQ_INT(coll_size(VG_REGULARIZATION_LOSSES), 2);
    CHECK(strcmp(coll_name(VG_REGULARIZATION_LOSSES, 0), "fcwd/kernel/Regularizer/l2_regularizer") == 0);
    CHECK(strcmp(coll_name(VG_REGULARIZATION_LOSSES, 1), "fcwd/bias/Regularizer/l2_regularizer") == 0);
    /* testFCWithBatchNorm: 8 variables, 3 per BatchNorm */
    fresh();
    in = vg_random_uniform(G, vg_const_i32_vec(G, (int32_t[]){5, 27}, 2, NULL), VG_FLOAT, 1, 0, NULL);
    vg_slim_args bn = {.decay = 0.9};
    vg_slim_args sc = {.normalizer_fn = VG_SLIM_BATCH_NORM, .normalizer_params = &bn};
    vg_slim_arg_scope_push(G, (const char *[]){VG_SLIM_FULLY_CONNECTED}, 1, &sc);
    out = vg_slim_fully_connected(G, in, 32, NULL, NULL);
    out = vg_slim_fully_connected(G, out, 32, NULL, NULL);
    vg_slim_arg_scope_pop(G);
    CHECK_EQ_INT(nvars(NULL), 8);
    CHECK_EQ_INT(nvars("fully_connected/BatchNorm"), 3);
    CHECK_EQ_INT(nvars("fully_connected_1/BatchNorm"), 3);
    CHECK_EQ_INT(vg_graph_status(G, NULL), VG_OK);
}

/* ---- BatchNormTest, pools, dropout, flatten, repeat, stack ----------------- */

static void test_batch_norm_names(void) {
    fresh();
    int before;
    /* testCreateVariables (scale=True), testCreateOp (fused: 'BatchNorm/FusedBatchNorm...') */
    vg_output out = vg_slim_batch_norm(G, images(5, 3, 3, 3), NULL, &(vg_slim_args){.scale = VG_SLIM_TRUE});
    CHECK(strncmp(vg_op_name(out.op), "BatchNorm/FusedBatchNorm", 24) == 0);
    CHECK(has_var("BatchNorm/beta") && has_var("BatchNorm/gamma"));
    CHECK(has_var("BatchNorm/moving_mean") && has_var("BatchNorm/moving_variance"));
    CHECK_EQ_INT(vg_slim_get_model_variables(G, "BatchNorm", NULL, 0), 4);
    CHECK_EQ_INT(coll_size(VG_TRAINABLE_VARIABLES), 2);
    /* default updates_collections: UPDATE_OPS */
    CHECK_EQ_INT(coll_size(VG_UPDATE_OPS), 2);
    /* testUpdatesCollection: 'BatchNorm/AssignMovingAvg', 'BatchNorm/AssignMovingAvg_1' */
    fresh();
    vg_slim_batch_norm(G, images(5, 3, 3, 3), NULL, &(vg_slim_args){.updates_collections = "my_update_ops"});
    CHECK_EQ_INT(coll_size("my_update_ops"), 2);
    CHECK(strcmp(coll_name("my_update_ops", 0), "BatchNorm/AssignMovingAvg") == 0);
    CHECK(strcmp(coll_name("my_update_ops", 1), "BatchNorm/AssignMovingAvg_1") == 0);
    /* testCreateOp non-fused: 'BatchNorm/batchnorm...' */
    out = vg_slim_batch_norm(G, images(5, 3, 3, 3), NULL, &(vg_slim_args){.fused = VG_SLIM_FALSE});
    CHECK(out.op && strncmp(vg_op_name(out.op), "BatchNorm_1/batchnorm", 21) == 0);
    /* zero_debias_moving_mean (contrib's own fused path): the mean's update is debiased */
    before = coll_size(VG_UPDATE_OPS);
    out = vg_slim_batch_norm(G, images(5, 3, 3, 3), "zd", &(vg_slim_args){.zero_debias_moving_mean = VG_SLIM_TRUE});
    CHECK(out.op != NULL);
    CHECK_EQ_INT(coll_size(VG_UPDATE_OPS), before + 2);
    /* not training: no updates */
    before = coll_size(VG_UPDATE_OPS);
    vg_slim_batch_norm(G, images(5, 3, 3, 3), NULL, &(vg_slim_args){.is_training = VG_SLIM_FALSE});
    CHECK_EQ_INT(coll_size(VG_UPDATE_OPS), before);
    CHECK_EQ_INT(vg_graph_status(G, NULL), VG_OK);
}

static void test_pool_dropout_flatten(void) {
    fresh();
    vg_output x = images(5, 3, 6, 3);
    /* MaxPool2DTest.testCreateMaxPool: [3, 3] -> 'MaxPool2D/MaxPool', [5, 1, 2, 3] */
    vg_output o = vg_slim_max_pool2d(G, x, 3, 3, NULL, NULL);
    CHECK(strcmp(vg_op_name(o.op), "MaxPool2D/MaxPool") == 0);
    CHECK_SHAPE(vg_output_shape(o), 5, 1, 2, 3);
    /* testCollectOutputs-style scope, testCreateSquareMaxPool SAME: [5, 2, 3, 3] */
    o = vg_slim_max_pool2d(G, x, 3, 3, "pool1", &(vg_slim_args){.padding = "SAME"});
    CHECK(strcmp(vg_op_name(o.op), "pool1/MaxPool") == 0);
    CHECK_SHAPE(vg_output_shape(o), 5, 2, 3, 3);
    /* AvgPool2DTest.testCreateAvgPool: 'AvgPool2D/AvgPool', [5, 1, 2, 3]; stride 1 SAME */
    o = vg_slim_avg_pool2d(G, x, 3, 3, NULL, NULL);
    CHECK(strcmp(vg_op_name(o.op), "AvgPool2D/AvgPool") == 0);
    CHECK_SHAPE(vg_output_shape(o), 5, 1, 2, 3);
    o = vg_slim_avg_pool2d(G, x, 3, 3, NULL, &(vg_slim_args){.stride = {1}, .padding = "SAME"});
    CHECK_SHAPE(vg_output_shape(o), 5, 3, 6, 3);
    /* DropoutTest.testCreateDropout: op name starts with 'Dropout/dropout'; shape kept */
    o = vg_slim_dropout(G, x, NULL, NULL);
    CHECK(strcmp(vg_op_name(o.op), "Dropout/dropout/mul_1") == 0);
    CHECK(strcmp(vg_op_name(vg_slim_dropout(G, x, NULL, NULL).op), "Dropout_1/dropout/mul_1") == 0);
    CHECK_SHAPE(vg_output_shape(o), 5, 3, 6, 3);
    /* testDropoutWhileNotTraining: the input unchanged */
    o = vg_slim_dropout(G, x, NULL, &(vg_slim_args){.is_training = VG_SLIM_FALSE});
    CHECK(strcmp(vg_op_type(o.op), "Identity") == 0 && vg_op_input(o.op, 0).op == x.op);
    /* FlattenTest.testCollectOutputs-like: [5, 3*6*3] */
    o = vg_slim_flatten(G, x, NULL);
    CHECK(strncmp(vg_op_name(o.op), "Flatten/", 8) == 0);
    CHECK_SHAPE(vg_output_shape(o), 5, 54);
    CHECK_EQ_INT(vg_graph_status(G, NULL), VG_OK);
}

static vg_output conv_layer(vg_graph *g, vg_output x, const char *scope, void *arg) {
    int64_t depth = arg ? *(int64_t *)arg : 32;
    return vg_slim_conv2d(g, x, depth, 3, 3, scope, NULL);
}

static vg_output fc_layer(vg_graph *g, vg_output x, const char *scope, void *arg) {
    return vg_slim_fully_connected(g, x, *(int64_t *)arg, scope, NULL);
}

static void test_repeat_stack(void) {
    fresh();
    /* RepeatTests.testRepeat: repeat(images, 3, conv2d, 32, [3, 3]) ->
     * 'Repeat/convolution2d_3/Relu', [5, 3, 3, 32] */
    vg_output o = vg_slim_repeat(G, images(5, 3, 3, 3), 3, conv_layer, NULL, "convolution2d", NULL);
    CHECK(strcmp(vg_op_name(o.op), "Repeat/convolution2d_3/Relu") == 0);
    CHECK_SHAPE(vg_output_shape(o), 5, 3, 3, 32);
    /* testRepeatWithScope: scope 'conv1' -> 'conv1/conv1_3/Relu' */
    o = vg_slim_repeat(G, images(5, 3, 3, 3), 3, conv_layer, NULL, "convolution2d", "conv1");
    CHECK(strcmp(vg_op_name(o.op), "conv1/conv1_3/Relu") == 0);
    CHECK(has_var("conv1/conv1_1/weights") && has_var("conv1/conv1_3/biases"));
    /* StackTests.testStackFullyConnected: stack(images, fully_connected, [10, 20, 30]) ->
     * 'Stack/fully_connected_3/Relu', [5, 30] */
    vg_output in = vg_random_uniform(G, vg_const_i32_vec(G, (int32_t[]){5, 27}, 2, NULL), VG_FLOAT, 1, 0, NULL);
    int64_t d[3] = {10, 20, 30};
    o = vg_slim_stack(G, in, fc_layer, (void *[]){&d[0], &d[1], &d[2]}, 3, "fully_connected", NULL);
    CHECK(strcmp(vg_op_name(o.op), "Stack/fully_connected_3/Relu") == 0);
    CHECK_SHAPE(vg_output_shape(o), 5, 30);
    /* testStackConvolution2d: 'Stack/convolution2d_3/Relu', [5, 3, 3, 30]; with scope */
    o = vg_slim_stack(G, images(5, 3, 3, 3), conv_layer, (void *[]){&d[0], &d[1], &d[2]}, 3, "convolution2d", NULL);
    CHECK(strcmp(vg_op_name(o.op), "Stack_1/convolution2d_3/Relu") == 0);
    CHECK_SHAPE(vg_output_shape(o), 5, 3, 3, 30);
    o = vg_slim_stack(G, images(5, 3, 3, 3), conv_layer, (void *[]){&d[0], &d[1], &d[2]}, 3, "convolution2d",
                      "conv1s");
    CHECK(strcmp(vg_op_name(o.op), "conv1s/conv1s_3/Relu") == 0);
    CHECK_EQ_INT(vg_graph_status(G, NULL), VG_OK);
}

/* ---- a MobileNet v1 block ---------------------------------------------------- */

/* mobilenet_v1.py: mobilenet_v1_arg_scope + mobilenet_v1_base's first layers
 * (Conv(3x3, stride 2, 32), DepthSepConv(3x3, stride 1, 64)) and the Logits head, in
 * variable scope 'MobilenetV1'; the names are those of the published
 * mobilenet_v1_1.0_224.ckpt. */
static void build_mobilenet_block(vg_graph *g, vg_output img, int num_classes) {
    vg_initializer tn = vg_init_truncated_normal(0, 0.09, 0);
    vg_slim_args bn = {.center = VG_SLIM_TRUE, .scale = VG_SLIM_TRUE, .decay = 0.9997, .epsilon = 0.001};
    vg_slim_args convs = {.weights_initializer = &tn, .activation_fn = VG_ACT_RELU6,
                          .normalizer_fn = VG_SLIM_BATCH_NORM};
    vg_slim_args l2 = {.weights_regularizer = vg_regularizer_l2(0.00004)};
    vg_slim_arg_scope_push(g, (const char *[]){VG_SLIM_CONV2D, VG_SLIM_SEPARABLE_CONV2D}, 2, &convs);
    vg_slim_arg_scope_push(g, (const char *[]){VG_SLIM_BATCH_NORM_FN}, 1, &bn);
    vg_slim_arg_scope_push(g, (const char *[]){VG_SLIM_CONV2D}, 1, &l2);
    vg_variable_scope_push(g, "MobilenetV1", NULL);
    vg_slim_arg_scope_push(g, (const char *[]){VG_SLIM_CONV2D, VG_SLIM_SEPARABLE_CONV2D}, 2,
                           &(vg_slim_args){.padding = "SAME"});
    vg_output net = vg_slim_conv2d(g, img, 32, 3, 3, "Conv2d_0", &(vg_slim_args){.stride = {2}});
    net = vg_slim_separable_conv2d(g, net, 0, 3, 3, "Conv2d_1_depthwise",
                                   &(vg_slim_args){.depth_multiplier = 1, .stride = {1}, .rate = {1}});
    net = vg_slim_conv2d(g, net, 64, 1, 1, "Conv2d_1_pointwise", &(vg_slim_args){.stride = {1}});
    vg_slim_arg_scope_pop(g);
    vg_variable_scope_push(g, "Logits", NULL);
    net = vg_slim_avg_pool2d(g, net, 4, 4, "AvgPool_1a", &(vg_slim_args){.padding = "VALID"});
    net = vg_slim_dropout(g, net, "Dropout_1b", &(vg_slim_args){.keep_prob = 0.999});
    net = vg_slim_conv2d(g, net, num_classes, 1, 1, "Conv2d_1c_1x1",
                         &(vg_slim_args){.activation_fn = VG_SLIM_LINEAR, .normalizer_fn = VG_SLIM_NO_NORMALIZER});
    vg_squeeze(g, net, (int32_t[]){1, 2}, 2, "SpatialSqueeze");
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
    vg_slim_arg_scope_pop(g);
    vg_slim_arg_scope_pop(g);
    vg_slim_arg_scope_pop(g);
}

static void test_mobilenet_block(void) {
    fresh();
    build_mobilenet_block(G, images(2, 8, 8, 3), 5);
    CHECK_EQ_INT(vg_graph_status(G, NULL), VG_OK);
    static const char *const want[] = {
        "MobilenetV1/Conv2d_0/weights",
        "MobilenetV1/Conv2d_0/BatchNorm/gamma",
        "MobilenetV1/Conv2d_0/BatchNorm/beta",
        "MobilenetV1/Conv2d_0/BatchNorm/moving_mean",
        "MobilenetV1/Conv2d_0/BatchNorm/moving_variance",
        "MobilenetV1/Conv2d_1_depthwise/depthwise_weights",
        "MobilenetV1/Conv2d_1_depthwise/BatchNorm/gamma",
        "MobilenetV1/Conv2d_1_depthwise/BatchNorm/beta",
        "MobilenetV1/Conv2d_1_depthwise/BatchNorm/moving_mean",
        "MobilenetV1/Conv2d_1_depthwise/BatchNorm/moving_variance",
        "MobilenetV1/Conv2d_1_pointwise/weights",
        "MobilenetV1/Conv2d_1_pointwise/BatchNorm/gamma",
        "MobilenetV1/Conv2d_1_pointwise/BatchNorm/beta",
        "MobilenetV1/Conv2d_1_pointwise/BatchNorm/moving_mean",
        "MobilenetV1/Conv2d_1_pointwise/BatchNorm/moving_variance",
        "MobilenetV1/Logits/Conv2d_1c_1x1/weights",
        "MobilenetV1/Logits/Conv2d_1c_1x1/biases",
    };
    int nw = (int)(sizeof want / sizeof *want);
    vg_output v[64];
    int n = vg_slim_get_model_variables(G, NULL, v, 64);
    CHECK_EQ_INT(n, nw);
    for (int i = 0; i < n && i < nw; i++)
        if (strcmp(vg_op_name(v[i].op), want[i]) != 0) {
            fprintf(stderr, "model variable %d: %s, expected %s\n", i, vg_op_name(v[i].op), want[i]);
            vg_test_failures++;
        }
    CHECK_EQ_INT(nvars(NULL), nw);
    CHECK_SHAPE(var_shape("MobilenetV1/Conv2d_0/weights"), 3, 3, 3, 32);
    CHECK_SHAPE(var_shape("MobilenetV1/Conv2d_1_depthwise/depthwise_weights"), 3, 3, 32, 1);
    CHECK_SHAPE(var_shape("MobilenetV1/Conv2d_1_pointwise/weights"), 1, 1, 32, 64);
    CHECK_SHAPE(var_shape("MobilenetV1/Logits/Conv2d_1c_1x1/weights"), 1, 1, 64, 5);
    /* the l2 regularizer is on conv2d only (depthwise_regularizer None) */
    CHECK_EQ_INT(coll_size(VG_REGULARIZATION_LOSSES), 3);
    CHECK(strcmp(coll_name(VG_REGULARIZATION_LOSSES, 0), "MobilenetV1/Conv2d_0/kernel/Regularizer/l2_regularizer") == 0);
    /* batch_norm updates: 2 per layer */
    CHECK_EQ_INT(coll_size(VG_UPDATE_OPS), 6);
    CHECK(vg_graph_op_by_name(G, "MobilenetV1/Conv2d_0/Relu6"));
    CHECK(vg_graph_op_by_name(G, "MobilenetV1/Logits/AvgPool_1a/AvgPool"));
    CHECK(vg_graph_op_by_name(G, "MobilenetV1/Logits/SpatialSqueeze"));
}

/* ---- conv + batch_norm forward by hand ---------------------------------------- */

/* x [1, 2, 2, 1] = 1, 2, 3, 4; conv2d 1x1, 2 outputs, weights [[1, -1]] (constant
 * initializer), batch_norm(scale, decay 0.5) training: per channel, c0 = x, c1 = -x; mean
 * 2.5 / -2.5, variance (biased) 1.25, y = (v - mean) / sqrt(1.25 + 0.001), relu. The
 * moving mean after one update: 0.5 * 0 + 0.5 * 2.5; the moving variance uses the
 * Bessel-corrected 5/3: 0.5 * 1 + 0.5 * 5/3. */
static void test_conv_bn_forward(void) {
    fresh();
    static const double wv[2] = {1, -1};
    vg_constant_array wa = {wv, 2, NULL, 0, false};
    vg_initializer wi = vg_init_constant_array(&wa);
    float xv[4] = {1, 2, 3, 4};
    vg_output x = vg_const_array(G, VG_FLOAT, (int64_t[]){1, 2, 2, 1}, 4, xv, "x");
    vg_slim_args bn = {.scale = VG_SLIM_TRUE, .decay = 0.5};
    vg_output y = vg_slim_conv2d(G, x, 2, 1, 1, NULL,
                                 &(vg_slim_args){.weights_initializer = &wi, .normalizer_fn = VG_SLIM_BATCH_NORM,
                                                 .normalizer_params = &bn});
    CHECK(strcmp(vg_op_name(y.op), "Conv/Relu") == 0);
    int nu = 0;
    const vg_output *ups = vg_graph_collection(G, VG_UPDATE_OPS, &nu);
    CHECK_EQ_INT(nu, 2);
    vg_status st;
    vg_session *s = vg_session_new(G, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, (vg_op *[]){vg_global_variables_initializer(G)}, 1, &st), &st);
    vg_tensor *out = NULL;
    vg_op *targets[2] = {ups[0].op, ups[1].op};
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, &y, &out, 1, targets, 2, NULL, &st), &st);
    if (out) {
        const float *o = vg_tensor_data(out);
        double inv = 1.0 / sqrt(1.25 + 0.001);
        for (int i = 0; i < 4; i++) {
            double c0 = (xv[i] - 2.5) * inv, c1 = (-xv[i] + 2.5) * inv;
            CHECK_NEAR(o[2 * i], c0 > 0 ? c0 : 0, 1e-5);
            CHECK_NEAR(o[2 * i + 1], c1 > 0 ? c1 : 0, 1e-5);
        }
        vg_tensor_free(out);
    }
    vg_tensor *mm = NULL, *mv = NULL;
    vg_session_run1(s, vg_variable_snapshot(vg_graph_op_by_name(G, "Conv/BatchNorm/moving_mean")), &mm, &st);
    vg_session_run1(s, vg_variable_snapshot(vg_graph_op_by_name(G, "Conv/BatchNorm/moving_variance")), &mv, &st);
    if (mm && mv) {
        CHECK_NEAR(((float *)vg_tensor_data(mm))[0], 1.25, 1e-5);
        CHECK_NEAR(((float *)vg_tensor_data(mm))[1], -1.25, 1e-5);
        CHECK_NEAR(((float *)vg_tensor_data(mv))[0], 0.5 + 0.5 * 5.0 / 3.0, 1e-5);
    }
    vg_tensor_free(mm);
    vg_tensor_free(mv);
    vg_session_free(s);
}

/* atrous conv2d (rate 2, SAME) and the depthwise-only separable_conv2d (VALID, depth
 * multiplier 2) with constant kernels, against the sums computed here */
static void test_dilated_and_depthwise_values(void) {
    fresh();
    float xv[5 * 5 * 2];
    for (int i = 0; i < 50; i++) xv[i] = (float)((i * 7) % 13) - 6.0f;
    vg_output x = vg_const_array(G, VG_FLOAT, (int64_t[]){1, 5, 5, 2}, 4, xv, "x");
    vg_initializer ones = vg_init_ones();
    vg_output y = vg_slim_conv2d(G, x, 1, 3, 3, NULL,
                                 &(vg_slim_args){.rate = {2}, .weights_initializer = &ones,
                                                 .activation_fn = VG_SLIM_LINEAR});
    CHECK(vg_graph_op_by_name(G, "Conv/SpaceToBatchND") && vg_graph_op_by_name(G, "Conv/BatchToSpaceND"));
    vg_output d = vg_slim_separable_conv2d(G, x, 0, 2, 2, NULL,
                                           &(vg_slim_args){.padding = "VALID", .depth_multiplier = 2,
                                                           .weights_initializer = &ones,
                                                           .activation_fn = VG_SLIM_LINEAR});
    CHECK_SHAPE(vg_output_shape(d), 1, 4, 4, 4);
    vg_status st;
    vg_session *s = vg_session_new(G, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, (vg_op *[]){vg_global_variables_initializer(G)}, 1, &st), &st);
    vg_tensor *o[2] = {NULL, NULL};
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, (vg_output[]){y, d}, o, 2, NULL, 0, NULL, &st), &st);
    if (o[0] && o[1]) {
        const float *a = vg_tensor_data(o[0]), *b = vg_tensor_data(o[1]);
        for (int i = 0; i < 5; i++)
            for (int j = 0; j < 5; j++) {
                double want = 0;
                for (int di = -2; di <= 2; di += 2)
                    for (int dj = -2; dj <= 2; dj += 2) {
                        int r = i + di, c = j + dj;
                        if (r >= 0 && r < 5 && c >= 0 && c < 5) want += xv[(r * 5 + c) * 2] + xv[(r * 5 + c) * 2 + 1];
                    }
                CHECK_NEAR(a[i * 5 + j], want, 1e-5);
            }
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++)
                for (int c = 0; c < 2; c++) {
                    double want = xv[(i * 5 + j) * 2 + c] + xv[(i * 5 + j + 1) * 2 + c] + xv[((i + 1) * 5 + j) * 2 + c] +
                                  xv[((i + 1) * 5 + j + 1) * 2 + c];
                    /* channel c, multiplier m -> output c * 2 + m; biases 0 */
                    CHECK_NEAR(b[(i * 4 + j) * 4 + c * 2], want, 1e-5);
                    CHECK_NEAR(b[(i * 4 + j) * 4 + c * 2 + 1], want, 1e-5);
                }
    }
    vg_tensor_free(o[0]);
    vg_tensor_free(o[1]);
    vg_session_free(s);
}

/* batch_norm with a run-time is_training tensor (both branches, updates only when
 * true), and updates_collections=None (the updates run with the output) */
static void test_batch_norm_is_training_tensor(void) {
    fresh();
    float xv[4] = {1, 2, 3, 6}; /* [4, 1]: mean 3, biased variance 3.5, corrected 14/3 */
    vg_output x = vg_const_array(G, VG_FLOAT, (int64_t[]){4, 1}, 2, xv, "x");
    vg_output tr = vg_placeholder(G, VG_BOOL, NULL, 0, "is_training");
    vg_output y = vg_slim_batch_norm(G, x, NULL, &(vg_slim_args){.is_training_tensor = tr, .decay = 0.5});
    vg_output y2 = vg_slim_batch_norm(G, x, "NoColl", &(vg_slim_args){.updates_collections = "", .decay = 0.5});
    CHECK_EQ_INT(coll_size(VG_UPDATE_OPS), 2); /* only the first layer's */
    int nu = 0;
    const vg_output *ups = vg_graph_collection(G, VG_UPDATE_OPS, &nu);
    vg_status st;
    vg_session *s = vg_session_new(G, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, (vg_op *[]){vg_global_variables_initializer(G)}, 1, &st), &st);
    vg_op *targets[2] = {ups[0].op, ups[1].op};
    for (int pass = 0; pass < 2; pass++) {
        bool training = pass == 0;
        vg_tensor *tv = vg_tensor_new_scalar_bool(training, NULL);
        vg_tensor *out = NULL;
        CHECK_OK(vg_session_run(s, NULL, &tr, &tv, 1, &y, &out, 1, targets, 2, NULL, &st), &st);
        if (out) {
            const float *o = vg_tensor_data(out);
            for (int i = 0; i < 4; i++) {
                /* training: batch statistics; inference: moving ones after one update
                 * (mean 0.5 * 3 = 1.5, variance 0.5 + 0.5 * 14 / 3) */
                double m = training ? 3 : 1.5, v = training ? 3.5 : 0.5 + 0.5 * 14.0 / 3.0;
                CHECK_NEAR(o[i], (xv[i] - m) / sqrt(v + 0.001), 1e-4);
            }
        }
        vg_tensor_free(out);
        vg_tensor_free(tv);
    }
    /* the false pass left the moving mean as it was */
    vg_tensor *mm = NULL;
    vg_session_run1(s, vg_variable_snapshot(vg_graph_op_by_name(G, "BatchNorm/moving_mean")), &mm, &st);
    if (mm) CHECK_NEAR(((float *)vg_tensor_data(mm))[0], 1.5, 1e-5);
    vg_tensor_free(mm);
    /* updates_collections None: fetching the output updates the moving mean */
    vg_tensor *o2 = NULL;
    CHECK_OK(vg_session_run1(s, y2, &o2, &st), &st);
    vg_tensor_free(o2);
    mm = NULL;
    vg_session_run1(s, vg_variable_snapshot(vg_graph_op_by_name(G, "NoColl/moving_mean")), &mm, &st);
    if (mm) CHECK_NEAR(((float *)vg_tensor_data(mm))[0], 1.5, 1e-5);
    vg_tensor_free(mm);
    vg_session_free(s);
}

int main(void) {
    RUN_TEST(test_arg_scope);
    RUN_TEST(test_arg_scope_capture);
    RUN_TEST(test_conv2d);
    RUN_TEST(test_conv2d_wd);
    RUN_TEST(test_conv2d_batch_norm);
    RUN_TEST(test_separable_conv2d);
    RUN_TEST(test_fully_connected);
    RUN_TEST(test_batch_norm_names);
    RUN_TEST(test_pool_dropout_flatten);
    RUN_TEST(test_repeat_stack);
    RUN_TEST(test_mobilenet_block);
    RUN_TEST(test_conv_bn_forward);
    RUN_TEST(test_dilated_and_depthwise_values);
    RUN_TEST(test_batch_norm_is_training_tensor);
    if (G) vg_graph_free(G);
    TEST_MAIN_END();
}
