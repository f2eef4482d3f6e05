/* test_naming_builders.c - the variables every public builder creates, as TF 1.15 names
 * and files them for the same Python call (issue 35 item 5): names, shapes, dtypes,
 * trainable flags, collections, initializers (the variable scope's included),
 * regularizers and reuse errors. One test per builder, each citing the TF test it
 * follows (tensorflow/python/layers/core_test.py, convolutional_test.py,
 * normalization_test.py, contrib/layers/python/layers/layers_test.py,
 * training/slot_creator_test.py, kernel_tests/metrics_test.py, variable_scope_test.py)
 * or the TF source. RNN cells: test_naming_rnn.c; scopes: test_naming_scopes.c. */
#include "test_util.h"
#include "status_fixture.h"
#include "session_test_util.h"
#include "vigil/vigil.h"
#include <math.h>

static int count(vg_graph *g, const char *key) {
    int n;
    vg_graph_collection(g, key, &n);
    return n;
}

/* Every element of the variable's initial value, after the initializer ran. */
static bool all_equal(vg_graph *g, const char *var, double want) {
    vg_op *op = vg_graph_op_by_name(g, var);
    if (!op) {
        fprintf(stderr, "  missing variable %s\n", var);
        return false;
    }
    vg_status st;
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_op *init = vg_variable_initializer(op);
    vg_tensor *t = NULL;
    bool ok = s && vg_session_run_targets(s, &init, 1, &st) == VG_OK &&
              vg_session_run1(s, vg_variable_snapshot(op), &t, &st) == VG_OK;
    for (int64_t i = 0; ok && i < vg_tensor_num_elements(t); i++) {
        double v = vg_tensor_dtype(t) == VG_DOUBLE ? ((const double *)vg_tensor_data(t))[i]
                                                   : ((const float *)vg_tensor_data(t))[i];
        if (v != want) ok = false;
    }
    if (!ok) fprintf(stderr, "  %s is not all %g\n", var, want);
    vg_tensor_free(t);
    vg_session_free(s);
    return ok;
}

static vg_output rnd_input(vg_graph *g, const int64_t *dims, int nd) {
    return vg_placeholder(g, VG_FLOAT, dims, nd, "inputs");
}

/* core_test.py: testFunctionalDenseInitializerFromScope (the scope's initializer reaches
 * the kernel (None in Dense), not the bias (zeros_initializer)), testFunctionalDenseInScope,
 * testFunctionalDenseTwice, testFunctionalDenseTwiceReuse(FromScope), testNonTrainable,
 * testKernelRegularizerWithReuse, testFunctionalDenseWithCustomGetter, testActivation. */
static int getter_calls;
static vg_variable counting(vg_graph *g, vg_getter_fn getter, void *ctx, const vg_getter_args *a, void *user) {
    (void)user;
    getter_calls++;
    return getter(g, a, ctx);
}
static vg_output sum_reg(vg_graph *g, vg_output w, double scale, void *arg) {
    (void)arg;
    return vg_mul(g, vg_reduce_sum(g, w, NULL, -1, false, "Sum"), vg_const_f32(g, (float)scale, "scale"), "mul");
}

static void test_dense(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = rnd_input(g, (int64_t[]){5, 3}, 2);
    vg_initializer ones = vg_init_ones();
    vg_variable_scope_push(g, "scope", &(vg_variable_scope_opts){.initializer = &ones});
    vg_layers_dense(g, x, 2, VG_ACT_NONE, NULL);
    vg_variable_scope_pop(g);
    CHECK_COLLECTION(g, VG_TRAINABLE_VARIABLES, "scope/dense/kernel scope/dense/bias");
    CHECK(all_equal(g, "scope/dense/kernel", 1.0) && all_equal(g, "scope/dense/bias", 0.0));
    /* testFunctionalDenseInScope / testFunctionalDenseTwice */
    vg_variable_scope_push(g, "test", NULL);
    vg_output y = vg_layers_dense(g, x, 2, VG_ACT_RELU, "my_dense");
    vg_variable_scope_pop(g);
    CHECK(strcmp(vname(y), "test/my_dense/Relu") == 0);
    CHECK(vg_graph_op_by_name(g, "test/my_dense/kernel") != NULL);
    vg_layers_dense(g, x, 2, VG_ACT_NONE, NULL);
    vg_output z = vg_layers_dense(g, x, 2, VG_ACT_NONE, NULL);
    CHECK(strcmp(vname(z), "dense_1/BiasAdd") == 0);
    CHECK_EQ_INT(count(g, VG_TRAINABLE_VARIABLES), 8);
    /* testFunctionalDenseTwiceReuseFromScope, and without reuse TF's ValueError */
    vg_variable_scope_push(g, "test", &(vg_variable_scope_opts){.reuse = VG_REUSE_TRUE});
    vg_output y2 = vg_layers_dense(g, x, 2, VG_ACT_RELU, "my_dense");
    vg_variable_scope_pop(g);
    CHECK(strcmp(vname(y2), "test_1/my_dense/Relu") == 0);
    CHECK_EQ_INT(count(g, VG_TRAINABLE_VARIABLES), 8);
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_variable_scope_push(g, "test", NULL);
    vg_layers_dense(g, x, 2, VG_ACT_RELU, "my_dense");
    vg_variable_scope_pop(g);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "Variable test/my_dense/kernel already exists, disallowed.");
    vg_graph_free(g);

    /* testNonTrainable, testKernelRegularizerWithReuse, testFunctionalDenseWithCustomGetter */
    g = vg_graph_new();
    x = rnd_input(g, (int64_t[]){5, 3}, 2);
    vg_layer_config c = {.kind = VG_LAYER_DENSE};
    c.units = 2;
    c.not_trainable = true;
    c.name = "frozen";
    vg_layers_apply(g, &c, x, vg_out(NULL, 0));
    CHECK_COLLECTION(g, VG_TRAINABLE_VARIABLES, "");
    CHECK_COLLECTION(g, VG_GLOBAL_VARIABLES, "frozen/kernel frozen/bias");
    c = (vg_layer_config){.kind = VG_LAYER_DENSE};
    c.units = 2;
    c.name = "my_dense";
    c.kernel_regularizer = (vg_regularizer){sum_reg, 1e-3, NULL};
    vg_layers_apply(g, &c, x, vg_out(NULL, 0));
    CHECK_COLLECTION(g, VG_REGULARIZATION_LOSSES, "my_dense/kernel/Regularizer/mul");
    c.reuse = VG_REUSE_TRUE;
    vg_layers_apply(g, &c, x, vg_out(NULL, 0));
    CHECK_EQ_INT(count(g, VG_REGULARIZATION_LOSSES), 1);
    getter_calls = 0;
    vg_variable_scope_push(g, "getter", &(vg_variable_scope_opts){.custom_getter = counting});
    vg_layers_dense(g, x, 2, VG_ACT_NONE, NULL);
    vg_variable_scope_pop(g);
    CHECK_EQ_INT(getter_calls, 2);
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

/* convolutional_test.py: testFunctionalConv2DInitializerFromScope (kernel ones from the
 * scope, bias zeros), testFunctionalConv2DReuseFromScope, testFunctionalConv2DNoReuse,
 * testConv2DKernelRegularizer. */
static void test_conv2d(void) {
    vg_graph *g = vg_graph_new();
    vg_output images = rnd_input(g, (int64_t[]){5, 7, 9, 3}, 4);
    vg_initializer ones = vg_init_ones();
    vg_variable_scope_push(g, "scope", &(vg_variable_scope_opts){.initializer = &ones});
    vg_layers_conv2d(g, images, 32, 3, 3, 1, "valid", VG_ACT_NONE, "conv1");
    vg_variable_scope_pop(g);
    CHECK_COLLECTION(g, VG_TRAINABLE_VARIABLES, "scope/conv1/kernel scope/conv1/bias");
    CHECK(all_equal(g, "scope/conv1/kernel", 1.0) && all_equal(g, "scope/conv1/bias", 0.0));
    vg_variable_scope_push(g, "scope", &(vg_variable_scope_opts){.reuse = VG_REUSE_TRUE});
    vg_layers_conv2d(g, images, 32, 3, 3, 1, "valid", VG_ACT_NONE, "conv1");
    vg_variable_scope_pop(g);
    CHECK_EQ_INT(count(g, VG_TRAINABLE_VARIABLES), 2);
    vg_layers_conv2d(g, images, 32, 3, 3, 1, "valid", VG_ACT_NONE, NULL);
    vg_layers_conv2d(g, images, 32, 3, 3, 1, "valid", VG_ACT_NONE, NULL);
    CHECK_COLLECTION(g, VG_TRAINABLE_VARIABLES, "scope/conv1/kernel scope/conv1/bias conv2d/kernel conv2d/bias "
                                                "conv2d_1/kernel conv2d_1/bias");
    vg_layer_config c = {.kind = VG_LAYER_CONV2D};
    c.units = 32;
    c.kernel_size[0] = c.kernel_size[1] = 3;
    c.kernel_regularizer = vg_regularizer_l2(0.1);
    vg_layers_apply(g, &c, images, vg_out(NULL, 0));
    CHECK_COLLECTION(g, VG_REGULARIZATION_LOSSES, "conv2d_2/kernel/Regularizer/l2_regularizer");
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

/* convolutional_test.py testCreateSeparableConv2D (names and shapes) with the scope's
 * initializer (SeparableConv2D's depthwise and pointwise initializers are None). */
static void test_separable_conv2d(void) {
    vg_graph *g = vg_graph_new();
    vg_output images = rnd_input(g, (int64_t[]){5, 7, 9, 4}, 4);
    vg_initializer half = vg_init_constant(0.5);
    vg_layer_config c = {.kind = VG_LAYER_SEPARABLE_CONV2D};
    c.units = 32;
    c.kernel_size[0] = c.kernel_size[1] = 3;
    vg_variable_scope_push(g, "s", &(vg_variable_scope_opts){.initializer = &half});
    vg_layers_apply(g, &c, images, vg_out(NULL, 0));
    vg_variable_scope_pop(g);
    CHECK_COLLECTION(g, VG_TRAINABLE_VARIABLES,
                     "s/separable_conv2d/depthwise_kernel s/separable_conv2d/pointwise_kernel s/separable_conv2d/bias");
    vg_shape dk = vg_output_shape(vg_out(vg_graph_op_by_name(g, "s/separable_conv2d/depthwise_kernel"), 0));
    vg_shape pk = vg_output_shape(vg_out(vg_graph_op_by_name(g, "s/separable_conv2d/pointwise_kernel"), 0));
    CHECK(dk.ndims == 4 && dk.dims[0] == 3 && dk.dims[1] == 3 && dk.dims[2] == 4 && dk.dims[3] == 1);
    CHECK(pk.ndims == 4 && pk.dims[0] == 1 && pk.dims[1] == 1 && pk.dims[2] == 4 && pk.dims[3] == 32);
    CHECK(all_equal(g, "s/separable_conv2d/depthwise_kernel", 0.5) &&
          all_equal(g, "s/separable_conv2d/pointwise_kernel", 0.5) && all_equal(g, "s/separable_conv2d/bias", 0.0));
    vg_graph_free(g);
}

/* normalization_test.py testCreateBN (two trainable, two not, two UPDATE_OPS) and
 * testFunctionalReuseFromScope; gamma/beta/moving_* initializers are explicit (ones,
 * zeros, zeros, ones), so the scope's initializer does not reach them. */
static void test_batch_normalization(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = rnd_input(g, (int64_t[]){5, 4, 3}, 3);
    vg_output training = vg_placeholder(g, VG_BOOL, NULL, 0, "training");
    vg_initializer half = vg_init_constant(0.5);
    vg_layer_config c = {.kind = VG_LAYER_BATCH_NORMALIZATION};
    vg_layer *bn = vg_layer_new(&c);
    vg_variable_scope_push(g, "scope", &(vg_variable_scope_opts){.initializer = &half});
    vg_layer_apply(bn, g, x, training);
    vg_variable_scope_pop(g);
    CHECK_EQ_INT(bn->num_trainable_weights, 2);
    CHECK_EQ_INT(bn->num_non_trainable_weights, 2);
    CHECK_EQ_INT(bn->num_updates, 2);
    CHECK_COLLECTION(g, VG_TRAINABLE_VARIABLES, "scope/batch_normalization/gamma scope/batch_normalization/beta");
    CHECK_COLLECTION(g, VG_GLOBAL_VARIABLES, "scope/batch_normalization/gamma scope/batch_normalization/beta "
                                             "scope/batch_normalization/moving_mean "
                                             "scope/batch_normalization/moving_variance");
    CHECK_EQ_INT(count(g, VG_UPDATE_OPS), 2);
    CHECK(all_equal(g, "scope/batch_normalization/gamma", 1.0) && all_equal(g, "scope/batch_normalization/beta", 0.0) &&
          all_equal(g, "scope/batch_normalization/moving_mean", 0.0) &&
          all_equal(g, "scope/batch_normalization/moving_variance", 1.0));
    vg_layer_free(bn);
    /* testFunctionalReuseFromScope */
    vg_variable_scope_push(g, "fscope", NULL);
    vg_layers_batch_normalization(g, x, training, 0.9, 1e-3, NULL);
    vg_variable_scope_pop(g);
    vg_variable_scope_push(g, "fscope", &(vg_variable_scope_opts){.reuse = VG_REUSE_TRUE});
    vg_layers_batch_normalization(g, x, training, 0.9, 1e-3, NULL);
    vg_variable_scope_pop(g);
    CHECK_EQ_INT(count(g, VG_GLOBAL_VARIABLES), 8);
    CHECK(vg_graph_op_by_name(g, "fscope/batch_normalization/moving_variance") != NULL);
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

/* contrib layers_test.py LayerNormTest testCreateVariables / testReuseVariables:
 * "LayerNorm/beta", "LayerNorm/gamma", shared with reuse; contrib's
 * variables.model_variable puts them in "model_variables" once. */
static void test_layer_norm(void) {
    vg_graph *g = vg_graph_new();
    vg_output images = rnd_input(g, (int64_t[]){5, 3, 3, 3}, 4);
    vg_layer_norm(g, images, NULL);
    CHECK_COLLECTION(g, VG_TRAINABLE_VARIABLES, "LayerNorm/beta LayerNorm/gamma");
    CHECK_COLLECTION(g, VG_MODEL_VARIABLES, "LayerNorm/beta LayerNorm/gamma");
    vg_layer_norm(g, images, "ln");
    vg_layer_config c = {.kind = VG_LAYER_LAYER_NORM};
    c.name = "ln";
    c.reuse = VG_REUSE_TRUE;
    vg_layers_apply(g, &c, images, vg_out(NULL, 0));
    CHECK_COLLECTION(g, VG_MODEL_VARIABLES, "LayerNorm/beta LayerNorm/gamma ln/beta ln/gamma");
    CHECK_EQ_INT(count(g, VG_GLOBAL_VARIABLES), 4);
    /* tf.variable_scope(None, "LayerNorm", reuse=True): TF's ValueError */
    c.name = NULL;
    vg_layers_apply(g, &c, images, vg_out(NULL, 0));
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "reuse=True cannot be used without a name_or_scope");
    vg_graph_free(g);
}

/* contrib layers_test.py FCTest testCreateFCWithScope ("fc1/Relu"),
 * testCreateFcCreatesWeightsAndBiasesVars ("fc1/weights", "fc1/biases"), testReuseVars
 * (reuse: still 2 variables; model_variable adds to "model_variables" only when it
 * creates), weights_initializer=xavier_initializer() (the scope's initializer does not
 * reach them). */
static void test_fully_connected(void) {
    vg_graph *g = vg_graph_new();
    vg_output inputs = rnd_input(g, (int64_t[]){5, 27}, 2);
    vg_output y = vg_fully_connected(g, inputs, 7, VG_ACT_RELU, "fc1");
    CHECK(strcmp(vname(y), "fc1/Relu") == 0);
    CHECK_COLLECTION(g, VG_TRAINABLE_VARIABLES, "fc1/weights fc1/biases");
    vg_variable_scope_enter(g, vg_get_variable_scope(g), &(vg_variable_scope_opts){.reuse = VG_REUSE_TRUE});
    vg_fully_connected(g, inputs, 7, VG_ACT_RELU, "fc1");
    vg_variable_scope_pop(g);
    CHECK_EQ_INT(count(g, VG_GLOBAL_VARIABLES), 2);
    CHECK_COLLECTION(g, VG_MODEL_VARIABLES, "fc1/weights fc1/biases");
    vg_initializer half = vg_init_constant(0.5);
    vg_variable_scope_push(g, "outer", &(vg_variable_scope_opts){.initializer = &half});
    vg_fully_connected(g, inputs, 7, VG_ACT_NONE, NULL);
    vg_variable_scope_pop(g);
    CHECK(vg_graph_op_by_name(g, "outer/fully_connected/weights/Initializer/random_uniform") != NULL);
    CHECK(all_equal(g, "outer/fully_connected/biases", 0.0));
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

/* slot_creator_test.py testCreateSlotFromVariableRespectsScope: the slot is made in the
 * current variable scope ("scope/scope/var/<slot>"); testCreateZerosSlotFromVariable:
 * zeros of the variable's dtype and shape, not trainable, global. slot_creator's
 * variable_scope(None, default_name) numbers a second optimizer's slot "_1"; under a
 * reusing scope the slot does not exist (TF's "Variable .../Momentum/ does not exist"). */
static void test_optimizer_slots(void) {
    vg_graph *g = vg_graph_new();
    double init[2] = {1.0, 2.5};
    vg_output iv = vg_const_array(g, VG_DOUBLE, (int64_t[]){2}, 1, init, "init");
    vg_variable v = vg_variable_new(g, "var", iv, VG_VAR_TRAINABLE);
    vg_output loss = vg_reduce_sum(g, vg_mul(g, v.read, v.read, "sq"), NULL, -1, false, "loss");
    vg_optimizer *m1 = vg_optimizer_new_momentum(0.1, 0.9, false), *m2 = vg_optimizer_new_momentum(0.1, 0.9, false);
    CHECK(vg_optimizer_minimize(m1, g, loss, NULL, 0, vg_out(NULL, 0), NULL) != NULL);
    CHECK(vg_optimizer_minimize(m2, g, loss, NULL, 0, vg_out(NULL, 0), NULL) != NULL);
    CHECK_COLLECTION(g, VG_GLOBAL_VARIABLES, "var var/Momentum var/Momentum_1");
    CHECK_COLLECTION(g, VG_TRAINABLE_VARIABLES, "var");
    vg_op *slot = vg_graph_op_by_name(g, "var/Momentum");
    CHECK(slot && vg_output_dtype(vg_out(slot, 0)) == VG_DOUBLE && vg_output_shape(vg_out(slot, 0)).dims[0] == 2);
    CHECK(vg_graph_op_by_name(g, "var/Momentum/Initializer/zeros") != NULL);
    CHECK(all_equal(g, "var/Momentum", 0.0));
    vg_optimizer_free(m1);
    vg_optimizer_free(m2);
    vg_graph_free(g);

    /* RespectsScope */
    g = vg_graph_new();
    vg_variable_scope_push(g, "scope", NULL);
    v = vg_variable_new(g, "var", vg_const_array(g, VG_DOUBLE, (int64_t[]){2}, 1, init, "init"), VG_VAR_TRAINABLE);
    loss = vg_reduce_sum(g, vg_mul(g, v.read, v.read, "sq"), NULL, -1, false, "loss");
    m1 = vg_optimizer_new_momentum(0.1, 0.9, false);
    CHECK(vg_optimizer_minimize(m1, g, loss, NULL, 0, vg_out(NULL, 0), NULL) != NULL);
    vg_variable_scope_pop(g);
    CHECK_COLLECTION(g, VG_GLOBAL_VARIABLES, "scope/var scope/scope/var/Momentum");
    /* under reuse: the slot "scope/var/Momentum_?" is looked up and missing */
    vg_optimizer *m3 = vg_optimizer_new_momentum(0.1, 0.9, false);
    vg_variable_scope_enter(g, vg_get_variable_scope(g), &(vg_variable_scope_opts){.reuse = VG_REUSE_TRUE});
    CHECK(vg_optimizer_minimize(m3, g, loss, NULL, 0, vg_out(NULL, 0), NULL) == NULL);
    vg_variable_scope_pop(g);
    vg_status st;
    CHECK_EQ_INT(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(st.msg, "Variable scope/var/Momentum/ does not exist, or was not created with "
                               "tf.get_variable(). Did you mean to set reuse=tf.AUTO_REUSE in VarScope?");
    vg_optimizer_free(m1);
    vg_optimizer_free(m3);
    vg_graph_free(g);
}

/* metrics_test.py MeanTest.testVars (_assert_metric_variables: the local and the metric
 * variables are exactly mean/count and mean/total, none global); metric_variable is a
 * tf.Variable, so a variable scope names it only through its name scope
 * ("eval/mean/total") and a name scope alone does too. */
static void test_metric_variables(void) {
    vg_graph *g = vg_graph_new();
    vg_output ones = vg_const_fill(g, VG_FLOAT, (int64_t[]){4, 3}, 2, 1.0, "ones");
    vg_metrics_mean(g, ones, NULL);
    CHECK_COLLECTION(g, VG_LOCAL_VARIABLES, "mean/total mean/count");
    CHECK_COLLECTION(g, VG_METRIC_VARIABLES, "mean/total mean/count");
    CHECK_COLLECTION(g, VG_GLOBAL_VARIABLES, "");
    CHECK(vg_graph_op_by_name(g, "mean/total/Initializer/zeros") != NULL);
    vg_variable_scope_push(g, "eval", NULL);
    vg_metrics_mean(g, ones, NULL);
    vg_variable_scope_pop(g);
    vg_graph_push_scope(g, "ns");
    vg_metrics_accuracy(g, ones, ones, NULL);
    vg_graph_pop_scope(g);
    CHECK_COLLECTION(g, VG_LOCAL_VARIABLES,
                     "mean/total mean/count eval/mean/total eval/mean/count ns/accuracy/total ns/accuracy/count");
    CHECK_EQ_INT(count(g, VG_TRAINABLE_VARIABLES), 0);
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

/* variable_scope_test.py testVarScopeRegularizer with a layer: the scope's regularizer
 * reaches the kernel and the bias through tf.get_variable (name scope
 * "<var>/Regularizer/", re-entered, so it reserves no name), besides the layer's own
 * kernel_regularizer (base.py add_weight, name_scope("kernel/Regularizer")); the total is
 * tf.losses.get_regularization_loss's add_n "total_regularization_loss". */
static void test_regularization_losses(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = rnd_input(g, (int64_t[]){5, 3}, 2);
    vg_layer_config c = {.kind = VG_LAYER_DENSE};
    c.units = 2;
    c.kernel_regularizer = vg_regularizer_l1(0.5);
    c.kernel_initializer = vg_init_ones();
    c.bias_initializer = vg_init_ones();
    vg_variable_scope_push(g, "tower", &(vg_variable_scope_opts){.regularizer = vg_regularizer_l2(1.0)});
    vg_layers_apply(g, &c, x, vg_out(NULL, 0));
    vg_variable_scope_pop(g);
    CHECK_COLLECTION(g, VG_REGULARIZATION_LOSSES,
                     "tower/dense/kernel/Regularizer/l2_regularizer tower/dense/kernel/Regularizer/l1_regularizer "
                     "tower/dense/bias/Regularizer/l2_regularizer");
    vg_output total = vg_losses_get_regularization_loss(g, NULL);
    CHECK(strcmp(vname(total), "total_regularization_loss") == 0);
    /* l2: 1.0 * sum(k^2)/2 = 3; l1: 0.5 * sum|k| = 3; bias l2: 1.0 * 2/2 = 1 */
    CHECK(fabs(init_and_fetch_f32(g, total) - 7.0f) < 1e-5);
    vg_graph_free(g);
}

/* training_util.py create_global_step / get_or_create_global_step: tf.get_variable in
 * the current variable scope (inside variable_scope("model"): "model/global_step"), int64
 * zeros, not trainable, in variables + global_step; a name scope does not prefix it;
 * the store knows it (get_variable with reuse finds it). */
static void test_global_step(void) {
    vg_graph *g = vg_graph_new();
    vg_graph_push_scope(g, "ns");
    vg_output gs = vg_get_or_create_global_step(g);
    vg_graph_pop_scope(g);
    CHECK(strcmp(vname(gs), "global_step") == 0 && vg_output_dtype(gs) == VG_INT64);
    CHECK_COLLECTION(g, VG_GLOBAL_STEP, "global_step");
    CHECK_COLLECTION(g, VG_GLOBAL_VARIABLES, "global_step");
    CHECK_EQ_INT(count(g, VG_TRAINABLE_VARIABLES), 0);
    CHECK(vg_get_or_create_global_step(g).op == gs.op);
    vg_get_variable_opts o;
    memset(&o, 0, sizeof o);
    o.dt = VG_INT64;
    o.reuse = VG_REUSE_TRUE;
    CHECK(vg_get_variable_ex(g, "global_step", &o).var == gs.op);
    vg_graph_free(g);
    g = vg_graph_new();
    vg_variable_scope_push(g, "model", NULL);
    gs = vg_get_or_create_global_step(g);
    vg_variable_scope_pop(g);
    CHECK(strcmp(vname(gs), "model/global_step") == 0);
    CHECK(vg_graph_op_by_name(g, "model/global_step/Initializer/zeros") != NULL);
    CHECK_COLLECTION(g, VG_GLOBAL_STEP, "model/global_step");
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_dense);
    RUN_TEST(test_conv2d);
    RUN_TEST(test_separable_conv2d);
    RUN_TEST(test_batch_normalization);
    RUN_TEST(test_layer_norm);
    RUN_TEST(test_fully_connected);
    RUN_TEST(test_optimizer_slots);
    RUN_TEST(test_metric_variables);
    RUN_TEST(test_regularization_losses);
    RUN_TEST(test_global_step);
    TEST_MAIN_END();
}
