/* test_layers_tf.c - tf.layers in C: names, variables, values against hand-computed
 * references, the object form, reuse, regularizers, dropout and batch normalization in
 * both training modes, layer_norm, gradients through layers by finite differences,
 * and the wrong-rank errors naming the layer. (test_layers.c is the architecture test.) */
#include "gradcheck.h"
#include "test_util.h"
#include "status_fixture.h"
#include "session_test_util.h"
#include "vigil/vigil.h"
#include <math.h>

static vg_tensor *tensor_f(const int64_t *dims, int nd, const float *v) {
    vg_status st;
    vg_tensor *t = vg_tensor_new(VG_FLOAT, dims, nd, &st);
    memcpy(vg_tensor_data(t), v, sizeof(float) * (size_t)vg_tensor_num_elements(t));
    return t;
}

/* Initializes the variables, runs `targets`, fetches n outputs with one feed (may be NULL). */
typedef struct runner {
    vg_graph *g;
    vg_session *s;
} runner;

static bool runner_open(runner *r, vg_graph *g) {
    vg_status st;
    r->g = g;
    vg_op *init = vg_global_variables_initializer(g);
    CHECK_OK(vg_graph_status(g, &st), &st);
    r->s = vg_session_new(g, NULL, &st);
    if (!r->s) return false;
    CHECK_OK(vg_session_run_targets(r->s, &init, 1, &st), &st);
    return true;
}

static vg_code run(runner *r, const vg_output *feeds, vg_tensor *const *fv, int nf, const vg_output *f, vg_tensor **out,
                   int n, vg_op *const *targets, int nt) {
    vg_status st;
    vg_code c = vg_session_run(r->s, NULL, feeds, fv, nf, f, out, n, targets, nt, NULL, &st);
    if (c != VG_OK) fprintf(stderr, "  run: %s\n", st.msg);
    return c;
}

static float fat(const vg_tensor *t, int64_t i) { return ((const float *)vg_tensor_data(t))[i]; }

static void test_dense_names_values(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, 3}, 2, "x");
    vg_output h = vg_layers_dense(g, x, 4, VG_ACT_RELU, NULL);
    vg_output y = vg_layers_dense(g, h, 2, VG_ACT_NONE, NULL);
    CHECK(has_op(g, "dense/kernel", "VariableV2") && has_op(g, "dense/bias", "VariableV2"));
    CHECK(has_op(g, "dense/MatMul", "MatMul") && has_op(g, "dense/BiasAdd", "BiasAdd") && has_op(g, "dense/Relu", "Relu"));
    CHECK(has_op(g, "dense_1/kernel", "VariableV2") && has_op(g, "dense_1/BiasAdd", "BiasAdd"));
    CHECK(strcmp(vg_op_name(y.op), "dense_1/BiasAdd") == 0);
    runner r;
    if (runner_open(&r, g)) {
        float xv[6] = {1, -2, 0.5f, 0, 3, -1};
        vg_tensor *xt = tensor_f((int64_t[]){2, 3}, 2, xv);
        vg_output f[3] = {h, vg_out(vg_graph_op_by_name(g, "dense/kernel/read"), 0),
                          vg_out(vg_graph_op_by_name(g, "dense/bias/read"), 0)};
        vg_tensor *o[3] = {0};
        CHECK_EQ_INT(run(&r, &x, &xt, 1, f, o, 3, NULL, 0), VG_OK);
        if (o[0]) {
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 4; j++) {
                    double s = fat(o[2], j);
                    for (int k = 0; k < 3; k++) s += xv[i * 3 + k] * fat(o[1], k * 4 + j);
                    CHECK_NEAR(fat(o[0], i * 4 + j), s > 0 ? s : 0, 1e-5);
                }
            /* glorot_uniform: |k| <= sqrt(6 / (3 + 4)) */
            for (int k = 0; k < 12; k++) CHECK(fabs(fat(o[1], k)) <= sqrt(6.0 / 7.0));
            CHECK_NEAR(fat(o[2], 0), 0, 0);
        }
        for (int i = 0; i < 3; i++) vg_tensor_free(o[i]);
        vg_tensor_free(xt);
        vg_session_free(r.s);
    }
    vg_graph_free(g);
}

static void test_dense_options_and_reuse(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, 2}, 2, "x");
    vg_layer_config c = {.kind = VG_LAYER_DENSE};
    c.units = 3;
    c.name = "fc";
    c.kernel_initializer = vg_init_constant(0.5);
    c.bias_initializer = vg_init_constant(0.25);
    c.kernel_regularizer = vg_regularizer_l2(0.1);
    vg_output y1 = vg_layers_apply(g, &c, x, (vg_output){0});
    CHECK(y1.op && has_op(g, "fc/kernel", NULL) && has_op(g, "fc/BiasAdd", "BiasAdd"));
    CHECK(has_op(g, "fc/kernel/Regularizer/l2_regularizer", NULL));
    int n;
    vg_graph_collection(g, VG_REGULARIZATION_LOSSES, &n);
    CHECK_EQ_INT(n, 1);
    /* the same name again without reuse: TF's error */
    vg_graph *g2 = vg_graph_new();
    vg_output x2 = vg_placeholder(g2, VG_FLOAT, (int64_t[]){-1, 2}, 2, "x");
    vg_layers_apply(g2, &c, x2, (vg_output){0});
    CHECK(vg_layers_apply(g2, &c, x2, (vg_output){0}).op == NULL);
    EXPECT_GRAPH_ERROR(g2, VG_INVALID_ARGUMENT, "Variable fc/kernel already exists");
    vg_graph_free(g2);
    /* reuse=True: shared variables, ops in "fc_1/"; no second regularization loss */
    c.reuse = VG_REUSE_TRUE;
    vg_output y2 = vg_layers_apply(g, &c, x, (vg_output){0});
    CHECK(y2.op && strcmp(vg_op_name(y2.op), "fc_1/BiasAdd") == 0);
    CHECK(vg_op_input(vg_graph_op_by_name(g, "fc_1/MatMul"), 1).op == vg_graph_op_by_name(g, "fc/kernel/read"));
    vg_graph_collection(g, VG_REGULARIZATION_LOSSES, &n);
    CHECK_EQ_INT(n, 1);
    /* use_bias=false, trainable=false */
    vg_layer_config c2 = {.kind = VG_LAYER_DENSE};
    c2.units = 1;
    c2.no_bias = true;
    c2.not_trainable = true;
    vg_layer *l = vg_layer_new(&c2);
    vg_output y3 = vg_layer_apply(l, g, x, (vg_output){0});
    CHECK(y3.op && strcmp(vg_op_type(y3.op), "MatMul") == 0);
    CHECK(l->kernel.var && !l->bias.var && l->num_trainable_weights == 0 && l->num_non_trainable_weights == 1);
    vg_graph_collection(g, VG_TRAINABLE_VARIABLES, &n);
    CHECK_EQ_INT(n, 2); /* fc/kernel, fc/bias */
    vg_layer_free(l);
    runner r;
    if (runner_open(&r, g)) {
        float xv[2] = {1, 2};
        vg_tensor *xt = tensor_f((int64_t[]){1, 2}, 2, xv);
        vg_output f[3] = {y1, y2, vg_losses_get_regularization_loss(g, NULL)};
        vg_tensor *o[3] = {0};
        /* the loss op is built after the session: rebuild the session */
        vg_session_free(r.s);
        runner_open(&r, g);
        CHECK_EQ_INT(run(&r, &x, &xt, 1, f, o, 3, NULL, 0), VG_OK);
        if (o[0]) {
            for (int j = 0; j < 3; j++) {
                CHECK_NEAR(fat(o[0], j), 0.5 * 3 + 0.25, 1e-6);
                CHECK_NEAR(fat(o[1], j), 0.5 * 3 + 0.25, 1e-6);
            }
            CHECK_NEAR(fat(o[2], 0), 0.1 * (6 * 0.25) / 2, 1e-6);
        }
        for (int i = 0; i < 3; i++) vg_tensor_free(o[i]);
        vg_tensor_free(xt);
        vg_session_free(r.s);
    }
    vg_graph_free(g);
}

static void test_object_form(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, 5}, 2, "x");
    vg_layer_config c = {.kind = VG_LAYER_DENSE};
    c.units = 2;
    vg_layer *a = vg_layer_new(&c), *b = vg_layer_new(&c);
    vg_output ya = vg_layer_apply(a, g, x, (vg_output){0});
    vg_output yb = vg_layer_apply(b, g, x, (vg_output){0});
    vg_output ya2 = vg_layer_apply(a, g, x, (vg_output){0}); /* second call: same variables */
    CHECK(strcmp(a->name, "dense") == 0 && strcmp(b->name, "dense_1") == 0);
    CHECK(a->kernel.var == vg_graph_op_by_name(g, "dense/kernel") && a->bias.var == vg_graph_op_by_name(g, "dense/bias"));
    CHECK(a->num_trainable_weights == 2 && a->trainable_weights[0].var == a->kernel.var);
    CHECK(ya.op && yb.op && ya2.op && strcmp(vg_op_name(ya2.op), "dense/BiasAdd_1") == 0);
    CHECK(vg_op_input(vg_graph_op_by_name(g, "dense/MatMul_1"), 1).op == a->kernel.read.op);
    /* a named object gets a unique scope from its name */
    c.name = "head";
    vg_layer *h1 = vg_layer_new(&c), *h2 = vg_layer_new(&c);
    vg_layer_apply(h1, g, x, (vg_output){0});
    vg_layer_apply(h2, g, x, (vg_output){0});
    CHECK(strcmp(h1->name, "head") == 0 && strcmp(h2->name, "head_1") == 0);
    /* a different input size on the second call */
    vg_output x3 = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, 3}, 2, "x3");
    CHECK(vg_layer_apply(a, g, x3, (vg_output){0}).op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "expected axis -1 of input shape to have value 5");
    vg_layer_free(a);
    vg_layer_free(b);
    vg_layer_free(h1);
    vg_layer_free(h2);
    vg_graph_free(g);
}

/* dense on a rank-3 input (tensordot over the last axis) */
static void test_dense_rank3(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, 2, 2}, 3, "x");
    vg_layer_config c = {.kind = VG_LAYER_DENSE};
    c.units = 3;
    c.kernel_initializer = vg_init_constant(1);
    vg_output y = vg_layers_apply(g, &c, x, (vg_output){0});
    vg_shape s = vg_output_shape(y);
    CHECK_EQ_INT(s.ndims, 3);
    runner r;
    if (runner_open(&r, g)) {
        float xv[4] = {1, 2, 3, 4};
        vg_tensor *xt = tensor_f((int64_t[]){1, 2, 2}, 3, xv), *o = NULL;
        CHECK_EQ_INT(run(&r, &x, &xt, 1, &y, &o, 1, NULL, 0), VG_OK);
        if (o) {
            CHECK_EQ_INT(vg_tensor_dim(o, 2), 3);
            CHECK_NEAR(fat(o, 0), 3, 1e-6);
            CHECK_NEAR(fat(o, 5), 7, 1e-6);
        }
        vg_tensor_free(o);
        vg_tensor_free(xt);
        vg_session_free(r.s);
    }
    vg_graph_free(g);
}

static void test_conv_and_pool(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){1, 4, 4, 1}, 4, "x");
    vg_layer_config c = {.kind = VG_LAYER_CONV2D};
    c.units = 2;
    c.kernel_size[0] = c.kernel_size[1] = 2;
    c.kernel_initializer = vg_init_constant(1);
    c.bias_initializer = vg_init_constant(0.5);
    vg_output y = vg_layers_apply(g, &c, x, (vg_output){0});
    CHECK(has_op(g, "conv2d/kernel", "VariableV2") && has_op(g, "conv2d/Conv2D", "Conv2D"));
    CHECK_EQ_INT(vg_output_shape(y).dims[1], 3); /* valid padding */
    vg_output mp = vg_layers_max_pooling2d(g, x, 2, 2, "valid", NULL);
    vg_output ap = vg_layers_average_pooling2d(g, x, 2, 2, "same", NULL);
    CHECK(has_op(g, "max_pooling2d/MaxPool", "MaxPool") && has_op(g, "average_pooling2d/AvgPool", "AvgPool"));
    vg_output fl = vg_layers_flatten(g, mp, NULL);
    CHECK_EQ_INT(vg_output_shape(fl).dims[1], 4);
    /* conv1d and pooling1d on [1, 4, 1] */
    vg_output x1 = vg_reshape_c(g, x, (int64_t[]){1, 16, 1}, 3, "x1");
    vg_layer_config c1 = {.kind = VG_LAYER_CONV1D};
    c1.units = 1;
    c1.kernel_size[0] = 3;
    c1.strides[0] = 2;
    c1.padding = "SAME";
    c1.kernel_initializer = vg_init_constant(1);
    vg_output y1 = vg_layers_apply(g, &c1, x1, (vg_output){0});
    CHECK(has_op(g, "conv1d/kernel", "VariableV2") && has_op(g, "conv1d/conv1d/Conv2D", "Conv2D"));
    CHECK(has_op(g, "conv1d/conv1d/Squeeze", "Squeeze"));
    vg_layer_config p1 = {.kind = VG_LAYER_MAX_POOLING1D};
    p1.pool_size[0] = 4;
    p1.strides[0] = 4;
    vg_output mp1 = vg_layers_apply(g, &p1, x1, (vg_output){0});
    /* conv2d_transpose: a 1x1 input, 2x2 kernel, stride 2 -> 2x2 output x * k */
    vg_output one = vg_slice_c(g, x, (int64_t[]){0, 0, 0, 0}, (int64_t[]){1, 1, 1, 1}, 4, "one");
    vg_layer_config ct = {.kind = VG_LAYER_CONV2D_TRANSPOSE};
    ct.units = 3;
    ct.kernel_size[0] = ct.kernel_size[1] = 2;
    ct.strides[0] = ct.strides[1] = 2;
    ct.kernel_initializer = vg_init_constant(2);
    vg_output yt = vg_layers_apply(g, &ct, one, (vg_output){0});
    CHECK(has_op(g, "conv2d_transpose/conv2d_transpose", "Conv2DBackpropInput"));
    vg_shape ts = vg_output_shape(yt);
    CHECK(ts.ndims == 4 && ts.dims[1] == 2 && ts.dims[2] == 2 && ts.dims[3] == 3);
    runner r;
    if (runner_open(&r, g)) {
        float xv[16];
        for (int i = 0; i < 16; i++) xv[i] = (float)(i + 1);
        vg_tensor *xt = tensor_f((int64_t[]){1, 4, 4, 1}, 4, xv);
        vg_output f[6] = {y, mp, ap, y1, mp1, yt};
        vg_tensor *o[6] = {0};
        CHECK_EQ_INT(run(&r, &x, &xt, 1, f, o, 6, NULL, 0), VG_OK);
        if (o[0]) {
            /* conv at (0,0): 1+2+5+6 + 0.5 */
            CHECK_NEAR(fat(o[0], 0), 14.5, 1e-5);
            CHECK_NEAR(fat(o[0], 1), 14.5, 1e-5);
            CHECK_NEAR(fat(o[0], (2 * 3 + 2) * 2), 11 + 12 + 15 + 16 + 0.5, 1e-5);
            CHECK_NEAR(fat(o[1], 0), 6, 0);
            CHECK_NEAR(fat(o[1], 3), 16, 0);
            CHECK_NEAR(fat(o[2], 0), 3.5, 1e-6);
            /* conv1d SAME stride 2, k=3: out[0] = x0 + x1 (pad 1 before? TF pads 0 before when
             * total pad is 1): positions 0,1,2 -> 1+2+3 */
            CHECK_EQ_INT(vg_tensor_dim(o[3], 1), 8);
            CHECK_NEAR(fat(o[3], 0), 1 + 2 + 3, 1e-5);
            CHECK_NEAR(fat(o[3], 7), 15 + 16, 1e-5);
            CHECK_NEAR(fat(o[4], 0), 4, 0);
            CHECK_NEAR(fat(o[4], 3), 16, 0);
            for (int i = 0; i < 12; i++) CHECK_NEAR(fat(o[5], i), 2, 1e-6);
        }
        for (int i = 0; i < 6; i++) vg_tensor_free(o[i]);
        vg_tensor_free(xt);
        vg_session_free(r.s);
    }
    vg_graph_free(g);
}

static void test_dropout(void) {
    vg_graph *g = vg_graph_new();
    vg_graph_set_seed(g, 7);
    vg_output x = vg_const_fill(g, VG_FLOAT, (int64_t[]){50, 40}, 2, 1.0, "x");
    vg_output off = vg_layers_dropout(g, x, 0.25, (vg_output){0}, 0, NULL);
    CHECK(has_op(g, "dropout/Identity", "Identity"));
    vg_output on = vg_layers_dropout(g, x, 0.25, vg_const_bool(g, true, "t"), 3, NULL);
    CHECK(has_op(g, "dropout_1/dropout/random_uniform", NULL) && has_op(g, "dropout_1/dropout/GreaterEqual", NULL));
    vg_output tr = vg_placeholder(g, VG_BOOL, NULL, 0, "training");
    vg_output dyn = vg_layers_dropout(g, x, 0.5, tr, 0, NULL);
    vg_layer_config c = {.kind = VG_LAYER_DROPOUT};
    c.rate = 0.5;
    int64_t ns[2] = {1, -1};
    c.noise_shape = ns;
    c.noise_ndims = 2;
    vg_output cols = vg_layers_apply(g, &c, x, vg_const_bool(g, true, "t2"));
    runner r;
    if (runner_open(&r, g)) {
        vg_output f[3] = {off, on, cols};
        vg_tensor *o[3] = {0};
        CHECK_EQ_INT(run(&r, NULL, NULL, 0, f, o, 3, NULL, 0), VG_OK);
        if (o[0]) {
            int zeros = 0;
            for (int i = 0; i < 2000; i++) {
                CHECK(fat(o[0], i) == 1);
                float v = fat(o[1], i);
                CHECK(v == 0 || fabsf(v - 1 / 0.75f) < 1e-6);
                zeros += v == 0;
            }
            CHECK(zeros > 400 && zeros < 600); /* ~500 */
            for (int i = 1; i < 50; i++)
                for (int j = 0; j < 40; j++) CHECK(fat(o[2], i * 40 + j) == fat(o[2], j)); /* same mask per column */
        }
        for (int i = 0; i < 3; i++) vg_tensor_free(o[i]);
        for (int mode = 0; mode < 2; mode++) {
            vg_status st;
            vg_tensor *tv = vg_tensor_new(VG_BOOL, NULL, 0, &st), *out = NULL;
            *(bool *)vg_tensor_data(tv) = mode == 1;
            CHECK_EQ_INT(run(&r, &tr, &tv, 1, &dyn, &out, 1, NULL, 0), VG_OK);
            if (out) {
                int zeros = 0;
                for (int i = 0; i < 2000; i++) zeros += fat(out, i) == 0;
                if (mode == 0) CHECK_EQ_INT(zeros, 0);
                else CHECK(zeros > 850 && zeros < 1150);
            }
            vg_tensor_free(out);
            vg_tensor_free(tv);
        }
        vg_session_free(r.s);
    }
    vg_graph_free(g);
}

static void test_batch_norm_layer(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, 2, 1, 2}, 4, "x");
    vg_output tr = vg_placeholder(g, VG_BOOL, NULL, 0, "training");
    vg_layer_config c = {.kind = VG_LAYER_BATCH_NORMALIZATION};
    vg_layer *bn = vg_layer_new(&c);
    vg_output y = vg_layer_apply(bn, g, x, tr);
    CHECK(bn->gamma.var == vg_graph_op_by_name(g, "batch_normalization/gamma"));
    CHECK(bn->beta.var == vg_graph_op_by_name(g, "batch_normalization/beta"));
    CHECK(bn->moving_mean.var == vg_graph_op_by_name(g, "batch_normalization/moving_mean"));
    CHECK(bn->moving_variance.var == vg_graph_op_by_name(g, "batch_normalization/moving_variance"));
    CHECK(bn->num_trainable_weights == 2 && bn->num_non_trainable_weights == 2);
    CHECK(has_op(g, "batch_normalization/FusedBatchNormV3", "FusedBatchNormV3"));
    CHECK(has_op(g, "batch_normalization/AssignMovingAvg", "AssignSub"));
    CHECK(has_op(g, "batch_normalization/AssignMovingAvg_1", "AssignSub"));
    int n;
    const vg_output *ups = vg_graph_collection(g, VG_UPDATE_OPS, &n);
    CHECK_EQ_INT(n, 2);
    vg_op *upd[2] = {n > 0 ? ups[0].op : NULL, n > 1 ? ups[1].op : NULL};
    vg_graph_collection(g, VG_TRAINABLE_VARIABLES, &n);
    CHECK_EQ_INT(n, 2);
    /* 2-D input: the non-fused path (moments + batchnorm) */
    vg_output x2 = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, 2}, 2, "x2");
    vg_output y2 = vg_layers_batch_normalization(g, x2, vg_const_bool(g, true, "t"), 0.9, 0.001, "bn2");
    CHECK(has_op(g, "bn2/moments/mean", NULL) && has_op(g, "bn2/batchnorm/Rsqrt", "Rsqrt"));
    runner r;
    if (runner_open(&r, g)) {
        float xv[8] = {1, 10, 3, 20, 5, 30, 7, 40}; /* channel 0: 1 3 5 7, channel 1: 10..40 */
        vg_status st;
        vg_tensor *xt = tensor_f((int64_t[]){2, 2, 1, 2}, 4, xv);
        vg_tensor *tv = vg_tensor_new(VG_BOOL, NULL, 0, &st);
        *(bool *)vg_tensor_data(tv) = true;
        vg_output feeds[2] = {x, tr};
        vg_tensor *fv[2] = {xt, tv}, *out = NULL;
        CHECK_EQ_INT(run(&r, feeds, fv, 2, &y, &out, 1, upd, 2), VG_OK);
        if (out) {
            double m0 = 4, v0 = 5, m1 = 25, v1 = 125;
            CHECK_NEAR(fat(out, 0), (1 - m0) / sqrt(v0 + 0.001), 1e-4);
            CHECK_NEAR(fat(out, 7), (40 - m1) / sqrt(v1 + 0.001), 1e-4);
        }
        vg_tensor_free(out);
        out = NULL;
        vg_output mm[2] = {bn->moving_mean.read, bn->moving_variance.read};
        vg_tensor *mo[2] = {0};
        CHECK_EQ_INT(run(&r, NULL, NULL, 0, mm, mo, 2, NULL, 0), VG_OK);
        if (mo[0]) {
            CHECK_NEAR(fat(mo[0], 0), 0.01 * 4, 1e-5);
            CHECK_NEAR(fat(mo[0], 1), 0.01 * 25, 1e-5);
            CHECK_NEAR(fat(mo[1], 0), 0.99 + 0.01 * 5 * 4 / 3, 1e-5); /* Bessel-corrected batch variance */
            CHECK_NEAR(fat(mo[1], 1), 0.99 + 0.01 * 125 * 4 / 3, 1e-4);
        }
        /* inference: the moving statistics; the updates leave them alone */
        *(bool *)vg_tensor_data(tv) = false;
        CHECK_EQ_INT(run(&r, feeds, fv, 2, &y, &out, 1, upd, 2), VG_OK);
        if (out && mo[0]) {
            CHECK_NEAR(fat(out, 0), (1 - fat(mo[0], 0)) / sqrt(fat(mo[1], 0) + 0.001), 1e-4);
            CHECK_NEAR(fat(out, 7), (40 - fat(mo[0], 1)) / sqrt(fat(mo[1], 1) + 0.001), 1e-4);
        }
        vg_tensor *mo2[2] = {0};
        CHECK_EQ_INT(run(&r, NULL, NULL, 0, mm, mo2, 2, NULL, 0), VG_OK);
        if (mo2[0] && mo[0]) CHECK_NEAR(fat(mo2[0], 1), fat(mo[0], 1), 1e-7);
        for (int i = 0; i < 2; i++) {
            vg_tensor_free(mo[i]);
            vg_tensor_free(mo2[i]);
        }
        vg_tensor_free(out);
        out = NULL;
        /* non-fused: per-column normalization */
        float x2v[4] = {1, 2, 3, 6};
        vg_tensor *x2t = tensor_f((int64_t[]){2, 2}, 2, x2v);
        CHECK_EQ_INT(run(&r, &x2, &x2t, 1, &y2, &out, 1, NULL, 0), VG_OK);
        if (out) {
            CHECK_NEAR(fat(out, 0), -1 / sqrt(1 + 0.001), 1e-4);
            CHECK_NEAR(fat(out, 3), 2 / sqrt(4 + 0.001), 1e-4);
        }
        vg_tensor_free(out);
        vg_tensor_free(x2t);
        vg_tensor_free(xt);
        vg_tensor_free(tv);
        vg_session_free(r.s);
    }
    vg_layer_free(bn);
    vg_graph_free(g);
}

/* d(layer output)/d(input) by finite differences: batch norm (training), layer_norm,
 * conv2d + dense, conv2d_transpose. */
static void test_layer_gradients(void) {
    vg_graph *g = vg_graph_new();
    vg_graph_set_seed(g, 1);
    vg_output x = vg_placeholder(g, VG_DOUBLE, (int64_t[]){2, 3, 3, 2}, 4, "x");
    vg_output h = vg_layers_batch_normalization(g, x, vg_const_bool(g, true, "t"), 0.99, 0.001, NULL);
    vg_layer_config c = {.kind = VG_LAYER_CONV2D};
    c.units = 2;
    c.kernel_size[0] = c.kernel_size[1] = 2;
    c.padding = "same";
    c.activation = VG_ACT_TANH;
    h = vg_layers_apply(g, &c, h, (vg_output){0});
    vg_layer_config t = {.kind = VG_LAYER_CONV2D_TRANSPOSE};
    t.units = 1;
    t.kernel_size[0] = t.kernel_size[1] = 3;
    t.strides[0] = t.strides[1] = 2;
    t.padding = "same";
    h = vg_layers_apply(g, &t, h, (vg_output){0});
    h = vg_layer_norm(g, vg_layers_flatten(g, h, NULL), NULL);
    CHECK(has_op(g, "LayerNorm/beta", "VariableV2") && has_op(g, "LayerNorm/gamma", "VariableV2"));
    h = vg_layers_dense(g, h, 3, VG_ACT_SIGMOID, NULL);
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    /* the variables must hold values for the check: initialize in a session first is not
     * possible through gradcheck, so feed the variables' read outputs as constants */
    vg_op *init = vg_global_variables_initializer(g);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    int nv;
    const vg_output *vars = vg_graph_collection(g, VG_TRAINABLE_VARIABLES, &nv);
    vg_output reads[16];
    vg_tensor *vals[16] = {0};
    for (int i = 0; i < nv && i < 16; i++) {
        reads[i] = vg_variable_snapshot(vars[i].op);
        CHECK_OK(vg_session_run1(s, reads[i], &vals[i], &st), &st);
    }
    vg_session_free(s);
    vg_tensor *xv = vg_tensor_new(VG_DOUBLE, (int64_t[]){2, 3, 3, 2}, 4, &st);
    for (int i = 0; i < 36; i++) ((double *)vg_tensor_data(xv))[i] = sin(i * 1.3) * 2;
    CHECK_EQ_INT(vg_gradcheck_ex(g, &x, &xv, 1, reads, vals, nv, h, 1e-5, 1e-5), 0);
    /* and with respect to the variables (fed), x fixed */
    CHECK_EQ_INT(vg_gradcheck_ex(g, reads, vals, nv, &x, &xv, 1, h, 1e-5, 1e-5), 0);
    for (int i = 0; i < nv && i < 16; i++) vg_tensor_free(vals[i]);
    vg_tensor_free(xv);
    vg_graph_free(g);
}

static void test_layer_norm_values(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, 4}, 2, "x");
    vg_output y = vg_layer_norm(g, x, NULL);
    vg_output y2 = vg_layer_norm(g, x, NULL);
    CHECK(has_op(g, "LayerNorm/moments/mean", NULL) && has_op(g, "LayerNorm_1/gamma", "VariableV2"));
    runner r;
    if (runner_open(&r, g)) {
        float xv[8] = {1, 2, 3, 4, -1, -1, 1, 1};
        vg_tensor *xt = tensor_f((int64_t[]){2, 4}, 2, xv), *o[2] = {0};
        vg_output f[2] = {y, y2};
        CHECK_EQ_INT(run(&r, &x, &xt, 1, f, o, 2, NULL, 0), VG_OK);
        if (o[0]) {
            CHECK_NEAR(fat(o[0], 0), -1.5 / sqrt(1.25), 1e-5);
            CHECK_NEAR(fat(o[0], 3), 1.5 / sqrt(1.25), 1e-5);
            CHECK_NEAR(fat(o[0], 4), -1, 1e-5);
            CHECK_NEAR(fat(o[1], 7), 1, 1e-5);
        }
        for (int i = 0; i < 2; i++) vg_tensor_free(o[i]);
        vg_tensor_free(xt);
        vg_session_free(r.s);
    }
    vg_graph_free(g);
}

/* The layer c applied to a float placeholder of shape dims[nd] in a new graph builds
 * nothing and fails the graph with INVALID_ARGUMENT naming msg. */
static void expect_layer_error(vg_layer_config c, const int64_t *dims, int nd, const char *msg) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, dims, nd, "x");
    CHECK(vg_layers_apply(g, &c, x, (vg_output){0}).op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, msg);
    vg_graph_free(g);
}

static void expect_rank_error(vg_layer_kind kind, const int64_t *dims, int nd, const char *msg) {
    expect_layer_error((vg_layer_config){.kind = kind, .units = 2}, dims, nd, msg);
}

static void test_errors(void) {
    expect_rank_error(VG_LAYER_CONV2D, (int64_t[]){-1, 28, 28}, 3,
                      "Input 0 of layer conv2d is incompatible with the layer: expected ndim=4, found ndim=3. Full "
                      "shape received: [?,28,28]");
    expect_rank_error(VG_LAYER_DENSE, (int64_t[]){5}, 1, "Input 0 of layer dense is incompatible with the layer: expected min_ndim=2, found ndim=1");
    expect_rank_error(VG_LAYER_DENSE, (int64_t[]){5, -1}, 2, "The last dimension of the inputs to `Dense` should be defined");
    expect_rank_error(VG_LAYER_MAX_POOLING1D, (int64_t[]){2, 3, 4, 5}, 4, "layer max_pooling1d is incompatible");
    expect_rank_error(VG_LAYER_CONV1D, (int64_t[]){2, 3, -1}, 3, "The channel dimension of the inputs should be defined");
    expect_layer_error((vg_layer_config){.kind = VG_LAYER_DROPOUT, .rate = 1.5, .name = "drop"}, (int64_t[]){2, 3}, 2,
                       "layer drop: rate");
    expect_layer_error((vg_layer_config){.kind = VG_LAYER_CONV2D, .units = 1, .padding = "full"},
                       (int64_t[]){2, 3, 3, 1}, 4, "layer conv2d: padding");
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){2, 3}, 2, "x");
    CHECK(vg_layers_dropout(g, x, 0.5, vg_const_f32(g, 1, "notbool"), 0, NULL).op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "training must be a bool scalar");
    vg_graph_free(g);
}

/* separable_conv2d: variable names, values against a direct loop, and the depthwise
 * op's gradients (SAME and VALID, strides 1 and 2) by finite differences */
static void test_separable_conv2d(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){1, 3, 3, 2}, 4, "x");
    vg_layer_config c = {.kind = VG_LAYER_SEPARABLE_CONV2D};
    c.units = 1;
    c.kernel_size[0] = c.kernel_size[1] = 2;
    c.depth_multiplier = 2;
    c.padding = "same";
    vg_layer *l = vg_layer_new(&c);
    vg_output y = vg_layer_apply(l, g, x, (vg_output){0});
    CHECK(has_op(g, "separable_conv2d/depthwise_kernel", "VariableV2"));
    CHECK(has_op(g, "separable_conv2d/pointwise_kernel", "VariableV2"));
    CHECK(has_op(g, "separable_conv2d/separable_conv2d/depthwise", "DepthwiseConv2dNative"));
    CHECK(l->num_trainable_weights == 3 && l->kernel.var == l->depthwise_kernel.var);
    vg_shape ds = vg_output_shape(l->depthwise_kernel.ref), ps = vg_output_shape(l->pointwise_kernel.ref);
    CHECK(ds.dims[2] == 2 && ds.dims[3] == 2 && ps.dims[2] == 4 && ps.dims[3] == 1);
    vg_shape ys = vg_output_shape(y);
    CHECK(ys.ndims == 4 && ys.dims[1] == 3 && ys.dims[3] == 1);
    runner r;
    if (runner_open(&r, g)) {
        float xv[18];
        for (int i = 0; i < 18; i++) xv[i] = (float)(i % 5) - 1.5f;
        vg_tensor *xt = tensor_f((int64_t[]){1, 3, 3, 2}, 4, xv);
        vg_output f[3] = {y, l->depthwise_kernel.read, l->pointwise_kernel.read};
        vg_tensor *o[3] = {0};
        CHECK_EQ_INT(run(&r, &x, &xt, 1, f, o, 3, NULL, 0), VG_OK);
        if (o[0]) {
            /* SAME, k=2, stride 1: pad 0 before, 1 after */
            for (int oy = 0; oy < 3; oy++)
                for (int ox = 0; ox < 3; ox++) {
                    double out = 0;
                    for (int ch = 0; ch < 2; ch++)
                        for (int m = 0; m < 2; m++) {
                            double dsum = 0;
                            for (int ky = 0; ky < 2; ky++)
                                for (int kx = 0; kx < 2; kx++) {
                                    int iy = oy + ky, ix = ox + kx;
                                    if (iy >= 3 || ix >= 3) continue;
                                    dsum += xv[(iy * 3 + ix) * 2 + ch] * fat(o[1], ((ky * 2 + kx) * 2 + ch) * 2 + m);
                                }
                            out += dsum * fat(o[2], ch * 2 + m);
                        }
                    CHECK_NEAR(fat(o[0], oy * 3 + ox), out, 1e-5);
                }
        }
        for (int i = 0; i < 3; i++) vg_tensor_free(o[i]);
        vg_tensor_free(xt);
        vg_session_free(r.s);
    }
    vg_layer_free(l);
    vg_graph_free(g);
    for (int mode = 0; mode < 2; mode++) {
        g = vg_graph_new();
        vg_output xd = vg_placeholder(g, VG_DOUBLE, (int64_t[]){2, 5, 4, 2}, 4, "x");
        vg_output fd = vg_placeholder(g, VG_DOUBLE, (int64_t[]){3, 2, 2, 3}, 4, "f");
        int64_t st[4] = {1, mode ? 2 : 1, mode ? 2 : 1, 1};
        vg_output yd = vg_depthwise_conv2d_native(g, xd, fd, st, mode ? "SAME" : "VALID", NULL);
        vg_status s2;
        vg_tensor *xv = vg_tensor_new(VG_DOUBLE, (int64_t[]){2, 5, 4, 2}, 4, &s2);
        vg_tensor *fv = vg_tensor_new(VG_DOUBLE, (int64_t[]){3, 2, 2, 3}, 4, &s2);
        for (int i = 0; i < 80; i++) ((double *)vg_tensor_data(xv))[i] = sin(0.7 * i);
        for (int i = 0; i < 36; i++) ((double *)vg_tensor_data(fv))[i] = cos(0.3 * i);
        vg_output xs[2] = {xd, fd};
        vg_tensor *vals[2] = {xv, fv};
        CHECK_EQ_INT(vg_gradcheck(g, xs, vals, 2, yd, 1e-6, 1e-6), 0);
        vg_tensor_free(xv);
        vg_tensor_free(fv);
        vg_graph_free(g);
    }
}

/* tf.nn.moments + tf.nn.batch_normalization (what ResNet-style code calls directly) */
static void test_nn_moments_batch_normalization(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_DOUBLE, (int64_t[]){3, 2}, 2, "x");
    vg_output mean, var;
    CHECK_EQ_INT(vg_nn_moments(g, x, (int32_t[]){0}, 1, false, NULL, &mean, &var), VG_OK);
    CHECK(has_op(g, "moments/mean", NULL) && has_op(g, "moments/Squeeze_1", "Squeeze"));
    double ov[2] = {0.5, -1}, sv[2] = {2, 3};
    vg_output off = vg_const_array(g, VG_DOUBLE, (int64_t[]){2}, 1, ov, "off");
    vg_output sc = vg_const_array(g, VG_DOUBLE, (int64_t[]){2}, 1, sv, "sc");
    vg_output y = vg_nn_batch_normalization(g, x, mean, var, off, sc, 0.001, NULL);
    CHECK(has_op(g, "batchnorm/Rsqrt", "Rsqrt"));
    vg_status st;
    vg_tensor *xv = vg_tensor_new(VG_DOUBLE, (int64_t[]){3, 2}, 2, &st);
    double xs[6] = {1, 10, 2, 20, 6, 60};
    memcpy(vg_tensor_data(xv), xs, sizeof xs);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *o = NULL;
    CHECK_OK(vg_session_run(s, NULL, &x, &xv, 1, &y, &o, 1, NULL, 0, NULL, &st), &st);
    if (o) {
        double m0 = 3, v0 = (4 + 1 + 9) / 3.0, m1 = 30, v1 = (400 + 100 + 900) / 3.0;
        CHECK_NEAR(((double *)vg_tensor_data(o))[0], 2 * (1 - m0) / sqrt(v0 + 0.001) + 0.5, 1e-9);
        CHECK_NEAR(((double *)vg_tensor_data(o))[5], 3 * (60 - m1) / sqrt(v1 + 0.001) - 1, 1e-9);
    }
    vg_tensor_free(o);
    vg_session_free(s);
    CHECK_EQ_INT(vg_gradcheck(g, &x, &xv, 1, y, 1e-6, 1e-6), 0);
    vg_tensor_free(xv);
    CHECK_EQ_INT(vg_nn_moments(g, x, (int32_t[]){2}, 1, false, NULL, &mean, &var), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
}

/* conv2d with dilation_rate 2 (SpaceToBatchND / VALID Conv2D / BatchToSpaceND as TF
 * 1.15 builds it) against a direct dilated convolution, SAME and VALID; gradients by
 * finite differences; the ops' round trip */
static void test_dilated_conv2d(void) {
    for (int same = 0; same < 2; same++) {
        vg_graph *g = vg_graph_new();
        vg_output x = vg_placeholder(g, VG_DOUBLE, (int64_t[]){1, 5, 6, 1}, 4, "x");
        vg_layer *l = dilated_2x2_layer(VG_LAYER_CONV2D, 1, same);
        vg_output y = vg_layer_apply(l, g, x, (vg_output){0});
        CHECK(has_op(g, "conv2d/SpaceToBatchND", "SpaceToBatchND") && has_op(g, "conv2d/BatchToSpaceND", "BatchToSpaceND"));
        CHECK(has_op(g, "conv2d/SpaceToBatchND/paddings", "Const"));
        vg_shape ys = vg_output_shape(y);
        CHECK(ys.ndims == 4 && ys.dims[1] == (same ? 5 : 3) && ys.dims[2] == (same ? 6 : 4));
        vg_status st;
        vg_op *init = vg_global_variables_initializer(g);
        vg_session *s = vg_session_new(g, NULL, &st);
        CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
        vg_tensor *xv = vg_tensor_new(VG_DOUBLE, (int64_t[]){1, 5, 6, 1}, 4, &st);
        for (int i = 0; i < 30; i++) ((double *)vg_tensor_data(xv))[i] = (double)((i * 7) % 11) - 5;
        vg_output f[2] = {y, l->kernel.read};
        vg_tensor *o[2] = {0};
        CHECK_OK(vg_session_run(s, NULL, &x, &xv, 1, f, o, 2, NULL, 0, NULL, &st), &st);
        if (o[0]) {
            const double *xd = vg_tensor_data(xv), *k = vg_tensor_data(o[1]), *yd = vg_tensor_data(o[0]);
            int oh = same ? 5 : 3, ow = same ? 6 : 4, pt = same ? 1 : 0, pl = same ? 1 : 0; /* dilated k = 3 */
            for (int oy = 0; oy < oh; oy++)
                for (int ox = 0; ox < ow; ox++) {
                    double want = 0;
                    for (int ky = 0; ky < 2; ky++)
                        for (int kx = 0; kx < 2; kx++) {
                            int iy = oy + 2 * ky - pt, ix = ox + 2 * kx - pl;
                            if (iy >= 0 && iy < 5 && ix >= 0 && ix < 6) want += xd[iy * 6 + ix] * k[ky * 2 + kx];
                        }
                    CHECK_NEAR(yd[oy * ow + ox], want, 1e-9);
                }
        }
        for (int i = 0; i < 2; i++) vg_tensor_free(o[i]);
        vg_session_free(s);
        /* d y / d x, with the kernel fed as a constant */
        vg_tensor *kv = NULL;
        s = vg_session_new(g, NULL, &st);
        vg_session_run_targets(s, &init, 1, &st);
        vg_session_run1(s, l->kernel.read, &kv, &st);
        vg_session_free(s);
        vg_output kr = l->kernel.read;
        CHECK_EQ_INT(vg_gradcheck_ex(g, &x, &xv, 1, &kr, &kv, 1, y, 1e-6, 1e-6), 0);
        vg_tensor_free(kv);
        vg_tensor_free(xv);
        vg_layer_free(l);
        vg_graph_free(g);
    }
    /* SpaceToBatchND / BatchToSpaceND: values of a 2x2 block and the round trip */
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_DOUBLE, (int64_t[]){1, 2, 3, 1}, 4, "x");
    int32_t blk[2] = {2, 2}, pd[4] = {0, 0, 0, 1};
    vg_output bs = vg_const_i32_vec(g, blk, 2, "bs");
    vg_output ps = vg_const_array(g, VG_INT32, (int64_t[]){2, 2}, 2, pd, "ps");
    vg_output sb = vg_space_to_batch_nd(g, x, bs, ps, NULL);
    vg_output back = vg_batch_to_space_nd(g, sb, bs, ps, NULL);
    vg_shape ss = vg_output_shape(sb);
    CHECK(ss.dims[0] == 4 && ss.dims[1] == 1 && ss.dims[2] == 2);
    vg_status st;
    vg_tensor *xv = vg_tensor_new(VG_DOUBLE, (int64_t[]){1, 2, 3, 1}, 4, &st);
    for (int i = 0; i < 6; i++) ((double *)vg_tensor_data(xv))[i] = i + 1; /* [[1 2 3] [4 5 6]] */
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_output f[2] = {sb, back};
    vg_tensor *o[2] = {0};
    CHECK_OK(vg_session_run(s, NULL, &x, &xv, 1, f, o, 2, NULL, 0, NULL, &st), &st);
    if (o[0]) {
        const double *d = vg_tensor_data(o[0]);
        /* batch k = (ky, kx): [1 3] [2 0] [4 6] [5 0] */
        double want[8] = {1, 3, 2, 0, 4, 6, 5, 0};
        for (int i = 0; i < 8; i++) CHECK_NEAR(d[i], want[i], 0);
        for (int i = 0; i < 6; i++) CHECK_NEAR(((double *)vg_tensor_data(o[1]))[i], i + 1, 0);
    }
    for (int i = 0; i < 2; i++) vg_tensor_free(o[i]);
    vg_session_free(s);
    CHECK_EQ_INT(vg_gradcheck(g, &x, &xv, 1, sb, 1e-6, 1e-6), 0);
    vg_tensor_free(xv);
    int32_t bad[4] = {0, 0, 0, 0};
    vg_space_to_batch_nd(g, x, bs, vg_const_array(g, VG_INT32, (int64_t[]){2, 2}, 2, bad, "bad"), NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "not divisible by block_shape");
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_dilated_conv2d);
    RUN_TEST(test_nn_moments_batch_normalization);
    RUN_TEST(test_separable_conv2d);
    RUN_TEST(test_dense_names_values);
    RUN_TEST(test_dense_options_and_reuse);
    RUN_TEST(test_object_form);
    RUN_TEST(test_dense_rank3);
    RUN_TEST(test_conv_and_pool);
    RUN_TEST(test_dropout);
    RUN_TEST(test_batch_norm_layer);
    RUN_TEST(test_layer_norm_values);
    RUN_TEST(test_layer_gradients);
    RUN_TEST(test_errors);
    TEST_MAIN_END();
}
