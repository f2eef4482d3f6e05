/* test_loss_scale.c - TF 1.15's loss scaling (vigil/loss_scale.h): FixedLossScale,
 * DynamicLossScale and MixedPrecisionLossScaleOptimizer, with the cases of TF's
 * loss_scale_test.py and loss_scale_optimizer_test.py translated, the float16
 * overflow that dynamic scaling recovers from, the underflow that scaling avoids, the
 * variables' names and a checkpoint round trip, and a small model with float16 casts
 * trained with dynamic scaling against its float32 twin, and allocation failures in
 * the build and the run. Values are hand-computed. */
#include "test_util.h"
#include "train_fixture.h"
#include "status_fixture.h"
#include "session_test_util.h"
#include "oom_util.h"
#include "vigil/vigil.h"
#include <float.h>
#include <math.h>

/* The graph's sticky error message ("" when none). */
static const char *graph_msg(vg_graph *g) {
    static vg_status st;
    vg_status_clear(&st);
    vg_graph_status(g, &st);
    return st.msg;
}

static float get_f32(vg_session *s, vg_output o) {
    vg_tensor *t = fetch(s, o);
    float v = t ? *(const float *)vg_tensor_data(t) : NAN;
    vg_tensor_free(t);
    return v;
}

static int64_t get_i64(vg_session *s, vg_output o) {
    vg_tensor *t = fetch(s, o);
    int64_t v = t ? *(const int64_t *)vg_tensor_data(t) : -999;
    vg_tensor_free(t);
    return v;
}


/* Runs target with the scalar float32 k fed to ph. */
static void run_fed(vg_session *s, vg_output ph, float k, vg_op *target) {
    vg_status st;
    vg_tensor *t = vg_tensor_new_scalar_f32(k, &st);
    CHECK_OK(vg_session_run(s, NULL, &ph, &t, 1, NULL, NULL, 0, &target, 1, NULL, &st), &st);
    vg_tensor_free(t);
}

/* FixedLossScaleTest.test_basic, loss_scale.get */
static void test_fixed_and_get(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_loss_scale *ls = vg_fixed_loss_scale_new(123, &st);
    CHECK(ls != NULL);
    CHECK(!vg_loss_scale_is_dynamic(ls));
    vg_output v = vg_loss_scale_value(ls, g);
    vg_output should = {NULL, 0};
    vg_output grad = vg_const_f32(g, INFINITY, "g");
    vg_op *up = vg_loss_scale_update(ls, g, &grad, 1, &should); /* a fixed scale always applies */
    CHECK(up && should.op);
    CHECK(vg_loss_scale_current_loss_scale(ls).op == NULL);
    vg_session *s = new_session(g);
    CHECK_NEAR(get_f32(s, v), 123, 0);
    run_target(s, up);
    vg_tensor *b = fetch(s, should);
    CHECK(b && *(const bool *)vg_tensor_data(b));
    vg_tensor_free(b);
    vg_session_free(s);
    vg_loss_scale_free(ls);

    CHECK(vg_fixed_loss_scale_new(0.5, &st) == NULL);
    EXPECT_STATUS(&st, VG_INVALID_ARGUMENT, "loss_scale_value must be at least 1.");
    ls = vg_loss_scale_get(g, "128", &st);
    CHECK(ls && !vg_loss_scale_is_dynamic(ls) && vg_loss_scale_initial(ls) == 128);
    vg_loss_scale_free(ls);
    CHECK(vg_loss_scale_get(g, "bogus", &st) == NULL);
    CHECK_STR_CONTAINS(st.msg, "Could not interpret loss scale identifier: bogus");
    CHECK(vg_loss_scale_get(g, NULL, &st) == NULL);
    ls = vg_loss_scale_get(g, "dynamic", &st);
    CHECK(ls && vg_loss_scale_is_dynamic(ls));
    CHECK(vg_loss_scale_initial(ls) == 32768 && vg_loss_scale_increment_period(ls) == 2000 &&
          vg_loss_scale_multiplier(ls) == 2);
    vg_loss_scale_free(ls);
    vg_graph_free(g);
}

/* A dynamic scale whose update sees one gradient: x * k, k fed (Inf/NaN make it
 * non-finite), x = [1, 2]. */
typedef struct dyn {
    vg_graph *g;
    vg_loss_scale *ls;
    vg_output k, should, scale, steps;
    vg_op *update;
    vg_session *s;
} dyn;

static dyn dyn_new(double initial, int64_t period, double mult) {
    dyn d;
    memset(&d, 0, sizeof d);
    vg_status st;
    d.g = vg_graph_new();
    d.ls = vg_dynamic_loss_scale_new(d.g, initial, period, mult, &st);
    CHECK(d.ls != NULL);
    if (!d.ls) fprintf(stderr, "  %s\n", st.msg);
    d.k = vg_placeholder(d.g, VG_FLOAT, NULL, 0, "k");
    vg_output grads[3] = {vg_mul(d.g, vg_const_array(d.g, VG_FLOAT, (int64_t[]){2}, 1, (const float[]){1, 2}, "x"),
                                 d.k, NULL),
                          {NULL, 0}, /* a None gradient is ignored */
                          vg_const_f32(d.g, 3, "c")};
    d.update = vg_loss_scale_update(d.ls, d.g, grads, 3, &d.should);
    CHECK(d.update != NULL);
    if (!d.update) fprintf(stderr, "  %s\n", graph_msg(d.g));
    d.scale = vg_loss_scale_value(d.ls, d.g);
    d.steps = vg_read_variable_op(d.g, vg_loss_scale_good_steps(d.ls), VG_INT64, "steps");
    d.s = initialized_session(d.g);
    return d;
}

static void dyn_free(dyn *d) {
    vg_session_free(d->s);
    vg_loss_scale_free(d->ls);
    vg_graph_free(d->g);
}

/* n updates of d, update i with k[i] fed (k NULL: 1, a finite gradient); after each,
 * the scale must be exactly want[i] and the good steps steps[i] (steps NULL: 0).
 * Frees d. */
static void dyn_check_updates(dyn *d, const float *k, const float *want, const int64_t *steps, int n) {
    for (int i = 0; i < n; i++) {
        run_fed(d->s, d->k, k ? k[i] : 1.0f, d->update);
        float got = get_f32(d->s, d->scale);
        if (got != want[i]) fprintf(stderr, "  update %d: scale %.9g, expected %.9g\n", i, got, want[i]);
        CHECK(got == want[i]);
        CHECK_EQ_INT(get_i64(d->s, d->steps), steps ? steps[i] : 0);
    }
    dyn_free(d);
}

/* DynamicLossScaleTest.test_increase: initial 2, period 3, multiplier 2, finite
 * gradients: [2, 2, 4, 4, 4, 8]; good_steps [1, 2, 0, 1, 2, 0]. */
static void test_dynamic_increase(void) {
    dyn d = dyn_new(2, 3, 2);
    const float want[6] = {2, 2, 4, 4, 4, 8};
    const int64_t steps[6] = {1, 2, 0, 1, 2, 0};
    CHECK_NEAR(get_f32(d.s, d.scale), 2, 0);
    dyn_check_updates(&d, NULL, want, steps, 6);
}

/* test_keep_increasing_until_capped: initial float32 max / 4, period 1: the scale
 * grows to max / 2, then max, then stays (max * 2 is not finite). */
static void test_dynamic_capped(void) {
    dyn d = dyn_new(FLT_MAX / 4, 1, 2);
    const float want[3] = {FLT_MAX / 2, FLT_MAX, FLT_MAX};
    dyn_check_updates(&d, NULL, want, NULL, 3);
}

/* test_decrease_every_step: initial 512, non-finite gradients each step: halves down
 * to the floor of 1: [256, 128, 64, 32, 16, 8, 4, 2, 1, 1, 1]; should_apply false. */
static void test_dynamic_decrease(void) {
    dyn d = dyn_new(512, 2, 2);
    const float want[11] = {256, 128, 64, 32, 16, 8, 4, 2, 1, 1, 1};
    for (int i = 0; i < 11; i++) {
        vg_status st;
        vg_tensor *t = vg_tensor_new_scalar_f32(i % 2 ? NAN : INFINITY, &st), *b = NULL;
        CHECK_OK(vg_session_run(d.s, NULL, &d.k, &t, 1, &d.should, &b, 1, &d.update, 1, NULL, &st), &st);
        CHECK(b && !*(const bool *)vg_tensor_data(b));
        vg_tensor_free(b);
        vg_tensor_free(t);
        CHECK_NEAR(get_f32(d.s, d.scale), want[i], 0);
        CHECK_EQ_INT(get_i64(d.s, d.steps), 0);
    }
    dyn_free(&d);
}

/* test_nan_clear_good_step: initial 2, period 2: finite (2, steps 1), NaN (1, steps
 * 0), finite (1, steps 1), finite (2, steps 0). */
static void test_dynamic_nan_clears_good_steps(void) {
    dyn d = dyn_new(2, 2, 2);
    const float k[4] = {1, NAN, 1, 1}, want[4] = {2, 1, 1, 2};
    const int64_t steps[4] = {1, 0, 1, 0};
    dyn_check_updates(&d, k, want, steps, 4);
}

/* The variables: TF's names, non-trainable resource variables in "variables"; and a
 * checkpoint holds them as "current_loss_scale" (float32) and "good_steps" (int64). */
static void test_variables_and_checkpoint(void) {
    dyn d = dyn_new(8, 3, 2);
    vg_output sv = vg_loss_scale_current_loss_scale(d.ls), gv = vg_loss_scale_good_steps(d.ls);
    CHECK(sv.op && strcmp(vg_op_name(sv.op), "current_loss_scale") == 0);
    CHECK(gv.op && strcmp(vg_op_name(gv.op), "good_steps") == 0);
    CHECK(vg_is_resource_variable(sv) && vg_is_resource_variable(gv));
    CHECK_EQ_INT(vg_resource_variable_dtype(sv), VG_FLOAT);
    CHECK_EQ_INT(vg_resource_variable_dtype(gv), VG_INT64);
    CHECK(in_collection(d.g, VG_GLOBAL_VARIABLES, sv.op) && in_collection(d.g, VG_GLOBAL_VARIABLES, gv.op));
    CHECK(!in_collection(d.g, VG_TRAINABLE_VARIABLES, sv.op) && !in_collection(d.g, VG_TRAINABLE_VARIABLES, gv.op));
    CHECK(has_op(d.g, "current_loss_scale/Initializer/initial_value", "Const"));

    vg_status st;
    vg_saver *sav = vg_saver_new(d.g, NULL, &st);
    CHECK(sav != NULL);
    char dir[256], prefix[300];
    CHECK(tu_mkdtemp(dir, sizeof dir, "loss_scale")[0] != 0);
    snprintf(prefix, sizeof prefix, "%s/model", dir);
    run_fed(d.s, d.k, INFINITY, d.update); /* 4, 0 */
    run_fed(d.s, d.k, 1, d.update);        /* 4, 1 */
    CHECK_OK(vg_saver_save(sav, d.s, prefix, -1, NULL, 0, &st), &st);
    vg_checkpoint_reader *r = vg_checkpoint_reader_new(prefix, &st);
    CHECK(r != NULL);
    if (r) {
        vg_tensor *a = vg_checkpoint_reader_read(r, "current_loss_scale", &st);
        vg_tensor *b = vg_checkpoint_reader_read(r, "good_steps", &st);
        CHECK(a && vg_tensor_dtype(a) == VG_FLOAT && *(const float *)vg_tensor_data(a) == 4);
        CHECK(b && vg_tensor_dtype(b) == VG_INT64 && *(const int64_t *)vg_tensor_data(b) == 1);
        vg_tensor_free(a);
        vg_tensor_free(b);
        vg_checkpoint_reader_free(r);
    }
    run_fed(d.s, d.k, NAN, d.update); /* 2, 0 */
    run_fed(d.s, d.k, NAN, d.update); /* 1, 0 */
    CHECK_NEAR(get_f32(d.s, d.scale), 1, 0);
    CHECK_OK(vg_saver_restore(sav, d.s, prefix, &st), &st);
    CHECK_NEAR(get_f32(d.s, d.scale), 4, 0);
    CHECK_EQ_INT(get_i64(d.s, d.steps), 1);
    run_fed(d.s, d.k, 1, d.update); /* 4, 2 */
    run_fed(d.s, d.k, 1, d.update); /* 8, 0 */
    CHECK_NEAR(get_f32(d.s, d.scale), 8, 0);
    vg_saver_free(sav);
    tu_rmrf(dir);
    dyn_free(&d);

    /* a second graph's names are TF's too; in a name scope they are scoped */
    vg_graph *g = vg_graph_new();
    vg_graph_push_scope(g, "mp");
    vg_loss_scale *ls = vg_dynamic_loss_scale_new_default(g, &st);
    vg_graph_pop_scope(g);
    CHECK(ls && strcmp(vg_op_name(vg_loss_scale_current_loss_scale(ls).op), "mp/current_loss_scale") == 0);
    /* another graph's loss scale is refused */
    vg_graph *g2 = vg_graph_new();
    CHECK(vg_loss_scale_value(ls, g2).op == NULL);
    CHECK_EQ_INT(vg_graph_status(g2, NULL), VG_INVALID_ARGUMENT);
    vg_graph_free(g2);
    vg_loss_scale_free(ls);
    vg_graph_free(g);
}

/* The LossScaleOptimizerTest variable: "var", a trainable float32 scalar 1. */
static vg_variable var_one(vg_graph *g) {
    return vg_variable_new(g, "var", vg_const_f32(g, 1, "init"), VG_VAR_TRAINABLE);
}

/* Whether minimize made train (a failed check otherwise); when it did not, prints the
 * graph's error and frees opt and g. */
static bool train_built(vg_graph *g, vg_op *train, vg_optimizer *opt) {
    CHECK(train != NULL);
    if (train) return true;
    fprintf(stderr, "  %s\n", graph_msg(g));
    vg_optimizer_free(opt);
    vg_graph_free(g);
    return false;
}

/* LossScaleOptimizerTest.test_fixed_loss_scaling: var 1, loss var * 2 (gradient 2),
 * SGD(2), FixedLossScale(10): the scaled loss's gradient is 20, the unscaled one 2,
 * and var = 1 - 2 * 2 = -3. */
static void test_optimizer_fixed(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_variable v = var_one(g);
    vg_output loss = vg_mul(g, v.read, vg_const_f32(g, 2, "two"), "loss");
    vg_optimizer *opt = vg_mixed_precision_loss_scale_optimizer_new(vg_optimizer_new_sgd(2.0),
                                                                     vg_fixed_loss_scale_new(10, &st), &st);
    CHECK(opt != NULL);
    CHECK(strcmp(vg_optimizer_name(opt), "GradientDescent") == 0);
    CHECK(vg_optimizer_loss_scale(opt) && vg_optimizer_wrapped(opt));
    vg_output grad = {NULL, 0};
    CHECK_OK(vg_optimizer_compute_gradients(opt, g, loss, &v.ref, 1, &grad, &st), &st);
    /* grad = scaled_grad * (1 / scale): its first input is the gradient of loss * 10 */
    CHECK(grad.op && strcmp(vg_op_type(grad.op), "Mul") == 0);
    vg_output scaled_grad = vg_op_input(grad.op, 0);
    vg_op *train = vg_optimizer_apply_gradients(opt, g, &grad, &v.ref, 1, vg_out(NULL, 0), NULL);
    CHECK(train != NULL);
    vg_session *s = initialized_session(g);
    CHECK_NEAR(get_f32(s, scaled_grad), 20, 0);
    CHECK_NEAR(get_f32(s, grad), 2, 1e-6);
    run_target(s, train);
    CHECK_NEAR(get_f32(s, v.read), -3, 1e-6);
    vg_session_free(s);
    /* wrapping twice is refused, as enable_mixed_precision_graph_rewrite refuses */
    vg_loss_scale *four = vg_loss_scale_get(g, "4", &st);
    CHECK(vg_mixed_precision_loss_scale_optimizer_new(opt, four, &st) == NULL);
    CHECK_STR_CONTAINS(st.msg, "must not already be an instance of a MixedPrecisionLossScaleOptimizer");
    vg_loss_scale_free(four); /* a refused loss scale stays the caller's */
    vg_optimizer_free(opt);
    vg_graph_free(g);
}

/* Fixed scaling keeps a gradient that float16 would flush to zero: the forward value
 * w * 1e-8 passes through a float16 Cast, so its gradient (1e-8 per unit of the
 * loss) is a float16 value too; 1e-8 is below float16's smallest subnormal
 * (5.96e-8/2) and becomes 0, while 1e-8 * 1024 = 1.024e-5 is representable (to
 * float16's subnormal step 5.96e-8: 1.0252e-5 / 1024 = 1.0012e-8). */
static void test_fixed_scale_avoids_underflow(void) {
    vg_status st;
    for (int scaled = 0; scaled < 2; scaled++) {
        vg_graph *g = vg_graph_new();
        vg_variable w = vg_variable_new(g, "w", vg_const_f32(g, 3, "init"), VG_VAR_TRAINABLE);
        vg_output h16 = vg_cast(g, vg_mul(g, w.read, vg_const_f32(g, 1.0f, "one"), "a"), VG_HALF, "to_half");
        vg_output loss = vg_mul(g, vg_cast(g, h16, VG_FLOAT, "to_float"), vg_const_f32(g, 1e-8f, "tiny"), "loss");
        vg_optimizer *opt = vg_optimizer_new_sgd(1.0);
        if (scaled) opt = vg_mixed_precision_loss_scale_optimizer_new(opt, vg_fixed_loss_scale_new(1024, &st), &st);
        vg_output grad = {NULL, 0};
        CHECK_OK(vg_optimizer_compute_gradients(opt, g, loss, &w.ref, 1, &grad, &st), &st);
        vg_session *s = initialized_session(g);
        float gv = get_f32(s, grad);
        if (scaled)
            CHECK_NEAR(gv, 1e-8, 0.02e-8); /* float16's rounding of 1.024e-5, unscaled */
        else
            CHECK(gv == 0);
        free_session_optimizer_graph(s, opt, g);
    }
}

/* LossScaleOptimizerTest.test_dynamic_loss_scaling / test_dynamic_update: var 1,
 * loss = var * k (k fed), SGD(1), DynamicLossScale(2, period 1, multiplier 2), a
 * global step. Finite: var 1 - 1 = 0, scale 4, step 1. k = NaN: nothing applied, step
 * stays 1, scale 2. k = Inf: scale 1. k = 1: var -1, scale 2, step 2. */
static void test_optimizer_dynamic(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_variable v = var_one(g);
    vg_output k = vg_placeholder(g, VG_FLOAT, NULL, 0, "k");
    vg_output loss = vg_mul(g, v.read, k, "loss");
    vg_output gs = vg_get_or_create_global_step(g);
    vg_loss_scale *ls = vg_dynamic_loss_scale_new(g, 2, 1, 2, &st);
    vg_optimizer *opt = vg_mixed_precision_loss_scale_optimizer_new(vg_optimizer_new_sgd(1.0), ls, &st);
    CHECK(opt != NULL);
    vg_op *train = vg_optimizer_minimize(opt, g, loss, NULL, 0, gs, NULL);
    if (!train_built(g, train, opt)) return;
    CHECK(strcmp(vg_op_name(train), "GradientDescent") == 0 && strcmp(vg_op_type(train), "NoOp") == 0);
    CHECK(has_op(g, "cond_1/GradientDescent-wrapped", "AssignAdd") || has_op(g, "cond/GradientDescent-wrapped", "AssignAdd"));
    vg_output scale = vg_loss_scale_value(ls, g);
    vg_session *s = initialized_session(g);
    const float ks[4] = {1, NAN, INFINITY, 1}, var_want[4] = {0, 0, 0, -1}, scale_want[4] = {4, 2, 1, 2};
    const int64_t step_want[4] = {1, 1, 1, 2};
    for (int i = 0; i < 4; i++) {
        run_fed(s, k, ks[i], train);
        CHECK_NEAR(get_f32(s, v.read), var_want[i], 1e-6);
        CHECK_NEAR(get_f32(s, scale), scale_want[i], 0);
        vg_tensor *t = fetch(s, gs);
        CHECK(t && *(const int64_t *)vg_tensor_data(t) == step_want[i]);
        vg_tensor_free(t);
    }
    free_session_optimizer_graph(s, opt, g);
}

/* A float16 overflow in the backward pass: loss = sum(float32(float16(w * x))) * 3, so
 * the gradient reaching the float16 Cast is 3 * scale per element. With the default
 * 2^15: 98304 > 65504 (float16's max) -> Inf: skipped, scale 16384; 3 * 16384 = 49152
 * is finite: applied with w's gradient x * 3 (x = [1, 2]), SGD(0.01): w = 1 - [0.03,
 * 0.06]. Adam (slots) must not move on the skipped step either. */
static void test_half_overflow_skips_step(void) {
    vg_status st;
    for (int adam = 0; adam < 2; adam++) {
        vg_graph *g = vg_graph_new();
        vg_variable w = vg_variable_new(g, "w", vg_const_fill(g, VG_FLOAT, (int64_t[]){2}, 1, 1, "init"),
                                        VG_VAR_TRAINABLE);
        vg_output x = vg_const_array(g, VG_FLOAT, (int64_t[]){2}, 1, (const float[]){1, 2}, "x");
        vg_output h = vg_cast(g, vg_cast(g, vg_mul(g, w.read, x, "wx"), VG_HALF, "Cast"), VG_FLOAT, "Cast_1");
        vg_output loss = vg_mul(g, vg_reduce_sum(g, h, NULL, -1, false, "Sum"), vg_const_f32(g, 3, "three"), "loss");
        vg_loss_scale *ls = vg_dynamic_loss_scale_new_default(g, &st);
        vg_optimizer *inner = adam ? vg_optimizer_new_adam(0.1, 0.9, 0.999, 1e-8) : vg_optimizer_new_sgd(0.01);
        vg_optimizer *opt = vg_mixed_precision_loss_scale_optimizer_new(inner, ls, &st);
        vg_op *train = vg_optimizer_minimize(opt, g, loss, NULL, 0, vg_out(NULL, 0), NULL);
        if (!train_built(g, train, opt)) continue;
        vg_output scale = vg_loss_scale_value(ls, g);
        vg_session *s = initialized_session(g);
        run_target(s, train);
        CHECK_NEAR(get_f32(s, scale), 16384, 0);
        vg_tensor *t = fetch(s, w.read);
        CHECK(t && ((const float *)vg_tensor_data(t))[0] == 1 && ((const float *)vg_tensor_data(t))[1] == 1);
        vg_tensor_free(t);
        run_target(s, train);
        CHECK_NEAR(get_f32(s, scale), 16384, 0);
        t = fetch(s, w.read);
        /* Adam's first step moves each weight by lr (sign of the gradient): 1 - 0.1 */
        const float *wv = t ? vg_tensor_data(t) : NULL;
        CHECK(wv != NULL);
        if (wv && adam) {
            CHECK_NEAR(wv[0], 0.9, 1e-6);
            CHECK_NEAR(wv[1], 0.9, 1e-6);
        } else if (wv) {
            CHECK_NEAR(wv[0], 1 - 0.03, 1e-6);
            CHECK_NEAR(wv[1], 1 - 0.06, 1e-6);
        }
        vg_tensor_free(t);
        free_session_optimizer_graph(s, opt, g);
    }
}

static int count_type(vg_graph *g, const char *type) {
    int n = 0;
    for (int i = 0; i < vg_graph_num_ops(g); i++) n += strcmp(vg_op_type(vg_graph_op(g, i)), type) == 0;
    return n;
}

/* A Gather's gradient (vigil's IndexedSlices) keeps its sparse form: its values are
 * unscaled (TF's _scale_grad of IndexedSlices), Momentum updates only the gathered
 * rows (SparseApplyMomentum). emb [3, 2] = 1, rows [2, 0], loss = sum(rows) * 2:
 * gradient 2 on rows 0 and 2; SGD-like Momentum(0.5, 0.9) first step: -= 0.5 * 2. */
static void test_sparse_gradient_scaled(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_variable e = vg_variable_new(g, "emb", vg_const_fill(g, VG_FLOAT, (int64_t[]){3, 2}, 2, 1, "init"),
                                    VG_VAR_TRAINABLE);
    vg_output rows = vg_gather(g, e.read, vg_const_i32_vec(g, (const int32_t[]){2, 0}, 2, "ix"), 0, "Gather");
    vg_output loss = vg_mul(g, vg_reduce_sum(g, rows, NULL, -1, false, "Sum"), vg_const_f32(g, 2, "two"), "loss");
    vg_optimizer *opt = vg_mixed_precision_loss_scale_optimizer_new(vg_optimizer_new_momentum(0.5, 0.9, false),
                                                                     vg_dynamic_loss_scale_new(g, 64, 2, 2, &st), &st);
    vg_op *train = vg_optimizer_minimize(opt, g, loss, NULL, 0, vg_out(NULL, 0), NULL);
    CHECK(train != NULL);
    CHECK_EQ_INT(count_type(g, "SparseApplyMomentum"), 1);
    CHECK_EQ_INT(count_type(g, "ApplyMomentum"), 0);
    vg_session *s = initialized_session(g);
    run_target(s, train);
    vg_tensor *t = fetch(s, e.read);
    const float want[6] = {0, 0, 1, 1, 0, 0};
    for (int i = 0; t && i < 6; i++) CHECK_NEAR(((const float *)vg_tensor_data(t))[i], want[i], 1e-6);
    vg_tensor_free(t);
    CHECK_NEAR(get_f32(s, vg_loss_scale_value(vg_optimizer_loss_scale(opt), g)), 64, 0);
    free_session_optimizer_graph(s, opt, g);
}

/* Resource variables (TF's ResourceApply* inside the cond): the same numbers as
 * test_optimizer_dynamic. */
static void test_resource_variables_dynamic(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_resource_variable v = vg_resource_variable_new(g, "var", vg_const_f32(g, 1, "init"), VG_VAR_TRAINABLE);
    vg_output gs = vg_get_or_create_global_step(g);
    vg_output k = vg_placeholder(g, VG_FLOAT, NULL, 0, "k");
    vg_output loss = vg_mul(g, v.value, k, "loss");
    vg_loss_scale *ls = vg_dynamic_loss_scale_new(g, 2, 1, 2, &st);
    vg_optimizer *opt = vg_mixed_precision_loss_scale_optimizer_new(vg_optimizer_new_sgd(1.0), ls, &st);
    vg_op *train = vg_optimizer_minimize(opt, g, loss, NULL, 0, gs, "train");
    CHECK(train != NULL && strcmp(vg_op_name(train), "train") == 0);
    CHECK_EQ_INT(count_type(g, "ResourceApplyGradientDescent"), 1);
    vg_output scale = vg_loss_scale_value(ls, g);
    vg_output vr = vg_read_variable_op(g, v.handle, VG_FLOAT, "vr");
    vg_session *s = initialized_session(g);
    const float ks[3] = {1, INFINITY, 1}, var_want[3] = {0, 0, -1}, scale_want[3] = {4, 2, 4};
    const int64_t step_want[3] = {1, 1, 2};
    for (int i = 0; i < 3; i++) {
        run_fed(s, k, ks[i], train);
        CHECK_NEAR(get_f32(s, vr), var_want[i], 1e-6);
        CHECK_NEAR(get_f32(s, scale), scale_want[i], 0);
        CHECK_EQ_INT(get_i64(s, gs), step_want[i]);
    }
    free_session_optimizer_graph(s, opt, g);
}

/* enable_mixed_precision_graph_rewrite(opt, loss_scale): the rewrite is on and opt is
 * wrapped; a wrapped optimizer is refused (TF's ValueError) and the rewrite then stays
 * off. */
static void test_enable_rewrite_with_loss_scale(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_disable_mixed_precision_graph_rewrite();
    vg_optimizer *sgd = vg_optimizer_new_sgd(0.1);
    vg_optimizer *wrapped = vg_mixed_precision_loss_scale_optimizer_new(sgd, vg_loss_scale_get(g, "8", &st), &st);
    vg_loss_scale *ls = vg_loss_scale_get(g, "dynamic", &st);
    CHECK(vg_enable_mixed_precision_graph_rewrite_with_loss_scale(wrapped, ls, &st) == NULL);
    EXPECT_STATUS(&st, VG_INVALID_ARGUMENT, "MixedPrecisionLossScaleOptimizer");
    CHECK(!vg_mixed_precision_graph_rewrite_enabled());
    vg_optimizer *opt = vg_enable_mixed_precision_graph_rewrite_with_loss_scale(vg_optimizer_new_adam_default(), ls, &st);
    CHECK(opt != NULL && vg_optimizer_loss_scale(opt) == ls);
    CHECK(vg_mixed_precision_graph_rewrite_enabled());
    CHECK(strcmp(vg_optimizer_name(opt), "Adam") == 0);
    vg_disable_mixed_precision_graph_rewrite();
    vg_optimizer_free(opt);
    vg_optimizer_free(wrapped);
    vg_graph_free(g);
}

/* A tiny regression y = x W + b with float16 storage of the activations (Casts at
 * the edges, float32 master weights and compute), trained with dynamic loss scaling,
 * reaches the float32 model's loss within float16's tolerance. */
static float train_regression(bool half, int steps, float *scale_out, float *loss0_out) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    float xs[16 * 3], ys[16];
    for (int i = 0; i < 16; i++) {
        float a = (float)(i % 4) / 4 - 0.4f, b = (float)(i / 4) / 4 - 0.3f, c = (float)((i * 7) % 5) / 5 - 0.5f;
        xs[i * 3] = a;
        xs[i * 3 + 1] = b;
        xs[i * 3 + 2] = c;
        ys[i] = 0.5f * a - 1.5f * b + 2.0f * c + 0.25f;
    }
    vg_output x = vg_const_array(g, VG_FLOAT, (int64_t[]){16, 3}, 2, xs, "x");
    vg_output y = vg_const_array(g, VG_FLOAT, (int64_t[]){16, 1}, 2, ys, "y");
    vg_variable W = vg_variable_new(g, "W", vg_const_fill(g, VG_FLOAT, (int64_t[]){3, 1}, 2, 0.1, "W0"),
                                    VG_VAR_TRAINABLE);
    vg_variable b = vg_variable_new(g, "b", vg_const_fill(g, VG_FLOAT, (int64_t[]){1}, 1, 0, "b0"), VG_VAR_TRAINABLE);
    /* the float32 loss, what both runs are judged by */
    vg_output d32 = vg_sub(g, vg_add(g, vg_matmul(g, x, W.read, false, false, NULL), b.read, NULL), y, NULL);
    vg_output l32 = vg_reduce_mean(g, vg_mul(g, d32, d32, NULL), NULL, -1, false, "loss32");
    /* the trained loss: activations stored in float16 when half */
    vg_output xin = half ? vg_cast(g, vg_cast(g, x, VG_HALF, "x16"), VG_FLOAT, "x32") : x;
    vg_output p = vg_add(g, vg_matmul(g, xin, W.read, false, false, "MatMul"), b.read, "pred");
    if (half) p = vg_cast(g, vg_cast(g, p, VG_HALF, "p16"), VG_FLOAT, "p32");
    vg_output d = vg_sub(g, p, y, "d");
    vg_output loss = vg_reduce_mean(g, vg_mul(g, d, d, "sq"), NULL, -1, false, "loss");
    vg_optimizer *opt = vg_optimizer_new_sgd(0.5);
    vg_loss_scale *ls = NULL;
    if (half) {
        ls = vg_dynamic_loss_scale_new(g, 32768, 20, 2, &st);
        opt = vg_mixed_precision_loss_scale_optimizer_new(opt, ls, &st);
    }
    vg_op *train = vg_optimizer_minimize(opt, g, loss, NULL, 0, vg_out(NULL, 0), NULL);
    CHECK(train != NULL);
    float out = NAN;
    if (train) {
        vg_output scale = half ? vg_loss_scale_value(ls, g) : vg_out(NULL, 0);
        vg_session *s = initialized_session(g);
        *loss0_out = get_f32(s, l32);
        for (int i = 0; i < steps; i++) run_target(s, train);
        out = get_f32(s, l32);
        *scale_out = half ? get_f32(s, scale) : 0;
        vg_session_free(s);
    } else {
        fprintf(stderr, "  %s\n", graph_msg(g));
    }
    vg_optimizer_free(opt);
    vg_graph_free(g);
    return out;
}

static void test_half_model_trains_like_float32(void) {
    float s32 = 0, s16 = 0, l0 = 0, l0h = 0;
    float l32 = train_regression(false, 300, &s32, &l0);
    float l16 = train_regression(true, 300, &s16, &l0h);
    fprintf(stderr, "  loss: start %g, float32 %g, float16 storage + dynamic scale %g (scale %g)\n", l0, l32, l16, s16);
    CHECK(l0 == l0h && l0 > 0.5f);
    CHECK(l32 < 1e-4f);
    /* float16 rounds the predictions to ~2^-11 relative: a loss floor of about 1e-6 */
    CHECK(fabsf(l16 - l32) < 5e-5f);
    CHECK(s16 >= 1 && isfinite(s16));
}

/* Allocation failures while building a dynamic-scale Adam step (variables, the
 * update's nested conds, the wrapped apply) and while running it: every build ends OK
 * and complete or RESOURCE_EXHAUSTED, never another code or a crash. */
static vg_code oom_build(vg_graph *g, void *mp) {
    oom_model *m = mp;
    m->nfetch = 1; /* the loss scale */
    vg_status st;
    vg_variable w = vg_variable_new(g, "w", vg_const_fill(g, VG_FLOAT, (int64_t[]){2}, 1, 1, "init"), VG_VAR_TRAINABLE);
    vg_output h = vg_cast(g, vg_cast(g, w.read, VG_HALF, NULL), VG_FLOAT, NULL);
    vg_output loss = vg_reduce_sum(g, vg_mul(g, h, h, NULL), NULL, -1, false, "loss");
    vg_loss_scale *ls = vg_dynamic_loss_scale_new_default(g, &st);
    if (!ls) return st.code;
    vg_optimizer *inner = vg_optimizer_new_adam_default();
    vg_optimizer *opt = inner ? vg_mixed_precision_loss_scale_optimizer_new(inner, ls, &st) : NULL;
    if (!opt) {
        vg_optimizer_free(inner);
        vg_loss_scale_free(ls);
        return VG_RESOURCE_EXHAUSTED;
    }
    m->train = vg_optimizer_minimize(opt, g, loss, NULL, 0, vg_get_or_create_global_step(g), NULL);
    m->fetch[0] = vg_loss_scale_value(ls, g);
    vg_optimizer_free(opt);
    m->init = vg_global_variables_initializer(g);
    return vg_graph_status(g, NULL);
}

static void test_allocation_failures(void) {
    oom_install();
    oom_model m;
    long nb = 0, nr = 0;
    int bad = oom_build_each(200000, &m, sizeof m, oom_build, oom_model_complete, &nb);
    bad += oom_run_each(200000, &m, sizeof m, oom_build, oom_model_steps, &nr);
    vg_allocator_set(NULL);
    CHECK_EQ_INT(bad, 0);
    CHECK(nb > 50 && nr > 10);
    fprintf(stderr, "  %ld build and %ld run allocations failed in turn\n", nb, nr);
}

int main(void) {
    RUN_TEST(test_fixed_and_get);
    RUN_TEST(test_dynamic_increase);
    RUN_TEST(test_dynamic_capped);
    RUN_TEST(test_dynamic_decrease);
    RUN_TEST(test_dynamic_nan_clears_good_steps);
    RUN_TEST(test_variables_and_checkpoint);
    RUN_TEST(test_optimizer_fixed);
    RUN_TEST(test_fixed_scale_avoids_underflow);
    RUN_TEST(test_optimizer_dynamic);
    RUN_TEST(test_half_overflow_skips_step);
    RUN_TEST(test_sparse_gradient_scaled);
    RUN_TEST(test_resource_variables_dynamic);
    RUN_TEST(test_enable_rewrite_with_loss_scale);
    RUN_TEST(test_half_model_trains_like_float32);
    RUN_TEST(test_allocation_failures);
    TEST_MAIN_END();
}
