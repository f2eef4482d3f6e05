/* test_gan.c - tf.contrib.gan (vigil/gan.h): the GAN losses against TF's
 * losses_impl_test.py values (and hand computation), the gradient penalty by hand,
 * gan_model's scopes and variable reuse, gan_train_ops updating one side each and leaving
 * the global step to its increment op, RunTrainOpsHook / sequential / joint hooks and
 * gan_train on a MonitoredTrainingSession, and a 1-D Gaussian GAN whose generator mean
 * moves to the data mean. */
#include "test_util.h"
#include "kernels_fixture.h"
#include "status_fixture.h"
#include "vigil/vigil.h"

static const double REAL[4] = {-5.0, 1.4, 12.5, 2.7};
static const double GEN[4] = {10.0, 4.4, -5.5, 3.6};

static vg_output vec4(vg_graph *g, const double *v, const char *name) {
    int64_t d = 4;
    return vg_const_values(g, VG_FLOAT, v, 4, &d, 1, &d, 1, false, name);
}

static double run_scalar(vg_graph *g, vg_output o, int64_t *nelems) {
    vg_status st;
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *t = NULL;
    double v = NAN;
    if (s && vg_session_run1(s, o, &t, &st) == VG_OK && t) {
        v = vg_tensor_scalar(t);
        if (nelems) *nelems = vg_tensor_num_elements(t);
    } else {
        fprintf(stderr, "  run failed: %s\n", st.msg);
    }
    vg_tensor_free(t);
    vg_session_free(s);
    return v;
}

typedef enum { LSQ, MODIFIED, MINIMAX, WASS } family;

static vg_output gloss(vg_graph *g, family f, vg_output gen, const vg_gan_loss_opts *o) {
    switch (f) {
    case LSQ: return vg_gan_least_squares_generator_loss(g, gen, 1.0, o);
    case MODIFIED: return vg_gan_modified_generator_loss(g, gen, 0.0, o);
    case MINIMAX: return vg_gan_minimax_generator_loss(g, gen, 0.0, o);
    default: return vg_gan_wasserstein_generator_loss(g, gen, o);
    }
}

static vg_output dloss(vg_graph *g, family f, vg_output real, vg_output gen, const vg_gan_loss_opts *o) {
    switch (f) {
    case LSQ: return vg_gan_least_squares_discriminator_loss(g, real, gen, 1.0, 0.0, o);
    case MODIFIED: return vg_gan_modified_discriminator_loss(g, real, gen, 0.25, o);
    case MINIMAX: return vg_gan_minimax_discriminator_loss(g, real, gen, 0.25, o);
    default: return vg_gan_wasserstein_discriminator_loss(g, real, gen, o);
    }
}

/* losses_impl_test.py: LeastSquaresLossTest, ModifiedLossTest, MinimaxLossTest,
 * WassersteinLossTest (the _LossesTest cases: all_correct with the op names,
 * loss_collection, no_reduction, patch, python/tensor scalar weight). */
static void test_losses_tf(void) {
    const struct {
        family f;
        double g, d;
        const char *gname, *dname;
    } c[] = {
        {LSQ, 17.69625, 41.73375, "lsq_generator_loss/value", "lsq_discriminator_loss/add"},
        {MODIFIED, 1.38582, 6.19637, "generator_modified_loss/value", "discriminator_modified_loss/add_1"},
        {MINIMAX, -4.82408, 6.19637, "generator_minimax_loss/Neg", "discriminator_minimax_loss/add_1"},
        {WASS, -3.12500, 0.22500, "generator_wasserstein_loss/value", "discriminator_wasserstein_loss/sub"},
    };
    for (int k = 0; k < 4; k++) {
        /* test_generator_all_correct, test_discriminator_all_correct */
        vg_graph *g = vg_graph_new();
        vg_output real = vec4(g, REAL, "real"), gen = vec4(g, GEN, "gen");
        vg_output gl = gloss(g, c[k].f, gen, NULL), dl = dloss(g, c[k].f, real, gen, NULL);
        CHECK(gl.op && dl.op);
        if (gl.op && strcmp(vg_op_name(gl.op), c[k].gname) != 0)
            fprintf(stderr, "  generator loss op %s, TF %s\n", vg_op_name(gl.op), c[k].gname);
        if (dl.op && strcmp(vg_op_name(dl.op), c[k].dname) != 0)
            fprintf(stderr, "  discriminator loss op %s, TF %s\n", vg_op_name(dl.op), c[k].dname);
        CHECK(gl.op && strcmp(vg_op_name(gl.op), c[k].gname) == 0);
        CHECK(dl.op && strcmp(vg_op_name(dl.op), c[k].dname) == 0);
        CHECK(vg_output_dtype(gl) == VG_FLOAT && vg_output_dtype(dl) == VG_FLOAT);
        CHECK_NEAR(run_scalar(g, gl, NULL), c[k].g, 1e-5);
        CHECK_NEAR(run_scalar(g, dl, NULL), c[k].d, 1e-5);
        /* each loss is in the "losses" collection once */
        int n = 0;
        vg_graph_collection(g, VG_LOSSES, &n);
        CHECK_EQ_INT(n, 2);
        vg_graph_free(g);

        /* test_*_loss_collection, test_*_no_reduction, test_*_with_*_scalar_weight */
        g = vg_graph_new();
        real = vec4(g, REAL, "real");
        gen = vec4(g, GEN, "gen");
        vg_gan_loss_opts o = {0};
        o.loss_collection = "collection";
        gloss(g, c[k].f, gen, &o);
        dloss(g, c[k].f, real, gen, &o);
        vg_graph_collection(g, "collection", &n);
        CHECK_EQ_INT(n, 2);
        vg_graph_collection(g, VG_LOSSES, &n);
        CHECK_EQ_INT(n, 0);
        memset(&o, 0, sizeof o);
        o.reduction = VG_REDUCTION_NONE;
        vg_shape gs = vg_output_shape(gloss(g, c[k].f, gen, &o));
        vg_shape ds = vg_output_shape(dloss(g, c[k].f, real, gen, &o));
        CHECK(gs.ndims == 1 && gs.dims[0] == 4 && ds.ndims == 1 && ds.dims[0] == 4);
        memset(&o, 0, sizeof o);
        o.weights = o.real_weights = o.generated_weights = vg_const_f32(g, 2.3f, "w");
        vg_output wg = gloss(g, c[k].f, gen, &o), wd = dloss(g, c[k].f, real, gen, &o);
        CHECK_NEAR(run_scalar(g, wg, NULL), c[k].g * 2.3, 1e-4);
        CHECK_NEAR(run_scalar(g, wd, NULL), c[k].d * 2.3, 1e-4);
        vg_graph_free(g);

        /* test_generator_patch, test_discriminator_patch: [2, 2] outputs, same values */
        g = vg_graph_new();
        int64_t d22[2] = {2, 2};
        real = vg_reshape_c(g, vec4(g, REAL, "real"), d22, 2, "r");
        gen = vg_reshape_c(g, vec4(g, GEN, "gen"), d22, 2, "f");
        CHECK_NEAR(run_scalar(g, gloss(g, c[k].f, gen, NULL), NULL), c[k].g, 1e-5);
        CHECK_NEAR(run_scalar(g, dloss(g, c[k].f, real, gen, NULL), NULL), c[k].d, 1e-5);
        vg_graph_free(g);
    }
    /* by hand: Wasserstein g = -mean(GEN) = -12.5/4; d = mean(GEN) - mean(REAL) = 3.125 - 2.9 */
    CHECK_NEAR(-(GEN[0] + GEN[1] + GEN[2] + GEN[3]) / 4, -3.125, 1e-12);
    /* add_summaries: scalar summaries under TF's tags */
    vg_graph *g = vg_graph_new();
    vg_gan_loss_opts o = {0};
    o.add_summaries = true;
    vg_gan_wasserstein_discriminator_loss(g, vec4(g, REAL, "real"), vec4(g, GEN, "gen"), &o);
    int n = 0;
    vg_graph_collection(g, "summaries", &n);
    CHECK_EQ_INT(n, 3);
    vg_graph_free(g);
}

/* The discriminator of the hand-computed tests: D(x) = sum_j x_j * c_j, c = (3, 4). */
static vg_output lin_disc(vg_graph *g, vg_output data, const vg_output *in, int n, void *p) {
    (void)in, (void)n, (void)p;
    double cv[2] = {3.0, 4.0};
    int64_t d[2] = {2, 1};
    vg_output c = vg_const_values(g, VG_FLOAT, cv, 2, d, 2, d, 2, false, "c");
    vg_variable b = vg_get_variable(g, "b", VG_FLOAT, NULL, 0, vg_init_zeros(), VG_VAR_TRAINABLE);
    return vg_add(g, vg_matmul(g, data, c, false, false, "MatMul"), b.read, "add");
}

static vg_output dense_gen(vg_graph *g, const vg_output *in, int n, void *p) {
    (void)n;
    int units = p ? *(int *)p : 2;
    return vg_layers_dense(g, in[0], units, VG_ACT_NONE, NULL);
}

/* A discriminator that takes data of any depth: mean over the features, then dense. */
static vg_output mean_disc(vg_graph *g, vg_output data, const vg_output *in, int n, void *p) {
    (void)in, (void)n, (void)p;
    int32_t ax = 1;
    return vg_layers_dense(g, vg_reduce_mean(g, data, &ax, 1, true, "Mean"), 1, VG_ACT_NONE, NULL);
}

static vg_output dense_disc(vg_graph *g, vg_output data, const vg_output *in, int n, void *p) {
    (void)in, (void)n, (void)p;
    vg_output h = vg_layers_dense(g, data, 4, VG_ACT_TANH, NULL);
    return vg_layers_dense(g, h, 1, VG_ACT_NONE, NULL);
}

/* wasserstein_gradient_penalty by hand: D is linear with gradient c = (3, 4) at every
 * interpolate, so each slope is sqrt(25 + eps) and the penalty (5 / target - 1)^2. */
static void test_gradient_penalty(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    int64_t d[2] = {3, 2};
    double rv[6] = {1, 2, 3, 4, 5, 6}, nv[6] = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6};
    vg_output real = vg_const_values(g, VG_FLOAT, rv, 6, d, 2, d, 2, false, "real");
    vg_output noise = vg_const_values(g, VG_FLOAT, nv, 6, d, 2, d, 2, false, "noise");
    vg_gan_model m;
    CHECK_OK(vg_gan_model_build(g, dense_gen, NULL, lin_disc, NULL, real, &noise, 1, NULL, &m, &st), &st);
    vg_output p1 = vg_gan_wasserstein_gradient_penalty(g, &m, 1e-10, 1.0, false, NULL);
    vg_output p2 = vg_gan_wasserstein_gradient_penalty(g, &m, 1e-10, 2.0, false, NULL);
    vg_output p3 = vg_gan_wasserstein_gradient_penalty(g, &m, 1e-10, 10.0, true, NULL);
    CHECK(p1.op && p2.op && p3.op);
    if (p1.op) CHECK_STR_CONTAINS(vg_op_name(p1.op), "wasserstein_gradient_penalty");
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_op *init = vg_global_variables_initializer(g);
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    vg_output f[3] = {p1, p2, p3};
    vg_tensor *t[3] = {NULL, NULL, NULL};
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, f, t, 3, NULL, 0, NULL, &st), &st);
    CHECK_NEAR(t[0] ? vg_tensor_scalar(t[0]) : NAN, 16.0, 1e-5);   /* (5 - 1)^2 */
    CHECK_NEAR(t[1] ? vg_tensor_scalar(t[1]) : NAN, 2.25, 1e-5);   /* (5/2 - 1)^2 */
    CHECK_NEAR(t[2] ? vg_tensor_scalar(t[2]) : NAN, 0.0, 1e-9);    /* one-sided: max(0, 0.5 - 1)^2 */
    for (int i = 0; i < 3; i++) vg_tensor_free(t[i]);
    /* the discriminator's variables were reused, not duplicated */
    int nb = 0;
    const vg_output *tv = vg_graph_collection(g, VG_TRAINABLE_VARIABLES, &nb);
    int nd = 0;
    for (int i = 0; i < nb; i++) nd += strncmp(vg_op_name(tv[i].op), "Discriminator/", 14) == 0;
    CHECK_EQ_INT(nd, 1);
    /* gan_loss with a gradient penalty: wasserstein d loss + 10 * 16 (the generator here
     * is trainable but its output enters D linearly) */
    vg_gan_loss_build_opts lo = {0};
    lo.gradient_penalty_weight = 10.0;
    lo.no_summaries = true;
    vg_session_free(s);
    vg_gan_loss l = vg_gan_loss_build(g, &m, VG_GAN_LOSS_WASSERSTEIN, VG_GAN_LOSS_WASSERSTEIN, &lo);
    vg_gan_loss l0 = vg_gan_loss_build(g, &m, VG_GAN_LOSS_WASSERSTEIN, VG_GAN_LOSS_WASSERSTEIN, NULL);
    CHECK(l.discriminator_loss.op && l0.discriminator_loss.op);
    s = vg_session_new(g, NULL, &st);
    init = vg_global_variables_initializer(g);
    vg_session_run_targets(s, &init, 1, &st);
    vg_output f2[2] = {l.discriminator_loss, l0.discriminator_loss};
    vg_tensor *t2[2] = {NULL, NULL};
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, f2, t2, 2, NULL, 0, NULL, &st), &st);
    if (t2[0] && t2[1]) CHECK_NEAR(vg_tensor_scalar(t2[0]) - vg_tensor_scalar(t2[1]), 160.0, 1e-4);
    vg_tensor_free(t2[0]), vg_tensor_free(t2[1]);
    vg_session_free(s);
    /* a negative weight is refused as TF */
    lo.gradient_penalty_weight = -1;
    vg_gan_loss bad = vg_gan_loss_build(g, &m, VG_GAN_LOSS_WASSERSTEIN, VG_GAN_LOSS_WASSERSTEIN, &lo);
    CHECK(bad.generator_loss.op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "`gradient_penalty_weight` must be greater than 0");
    vg_gan_model_free(&m);
    vg_graph_free(g);
}

/* A new graph with real [8, 2] = 1, noise [8, 3] = 0.5 and the GANModel of dense_gen
 * and dense_disc over them (default scopes; checked to build). */
static vg_graph *dense_gan_build(vg_output *real, vg_output *noise, vg_gan_model *m) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    *real = vg_const_fill(g, VG_FLOAT, (int64_t[]){8, 2}, 2, 1.0, "real");
    *noise = vg_const_fill(g, VG_FLOAT, (int64_t[]){8, 3}, 2, 0.5, "noise");
    CHECK_OK(vg_gan_model_build(g, dense_gen, NULL, dense_disc, NULL, *real, noise, 1, NULL, m, &st), &st);
    return g;
}

/* GANModelTest (train_test.py): scopes "Generator"/"Discriminator", the discriminator
 * built once and reused on the real data, variables split by scope; shape check. */
static void test_gan_model(void) {
    vg_status st;
    vg_output real, noise;
    vg_gan_model m;
    vg_graph *g = dense_gan_build(&real, &noise, &m);
    CHECK_EQ_INT(m.ngenerator_variables, 2);
    CHECK_EQ_INT(m.ndiscriminator_variables, 4);
    const char *gv[] = {"Generator/dense/kernel", "Generator/dense/bias"};
    const char *dv[] = {"Discriminator/dense/kernel", "Discriminator/dense/bias", "Discriminator/dense_1/kernel",
                        "Discriminator/dense_1/bias"};
    for (int i = 0; i < 2 && i < m.ngenerator_variables; i++) CHECK(strcmp(vg_op_name(m.generator_variables[i].op), gv[i]) == 0);
    for (int i = 0; i < 4 && i < m.ndiscriminator_variables; i++) {
        if (strcmp(vg_op_name(m.discriminator_variables[i].op), dv[i]) != 0)
            fprintf(stderr, "  variable %s, expected %s\n", vg_op_name(m.discriminator_variables[i].op), dv[i]);
        CHECK(strcmp(vg_op_name(m.discriminator_variables[i].op), dv[i]) == 0);
    }
    int nt = 0;
    vg_graph_collection(g, VG_TRAINABLE_VARIABLES, &nt);
    CHECK_EQ_INT(nt, 6);
    CHECK(strcmp(vg_vscope_name(m.generator_scope), "Generator") == 0);
    CHECK(strcmp(vg_vscope_name(m.discriminator_scope), "Discriminator") == 0);
    CHECK_STR_CONTAINS(vg_op_name(m.generated_data.op), "Generator/");
    CHECK_STR_CONTAINS(vg_op_name(m.discriminator_gen_outputs.op), "Discriminator/");
    CHECK_STR_CONTAINS(vg_op_name(m.discriminator_real_outputs.op), "Discriminator_1/");
    vg_shape s = vg_output_shape(m.discriminator_real_outputs);
    CHECK(s.ndims == 2 && s.dims[0] == 8 && s.dims[1] == 1);
    vg_gan_model_free(&m);
    /* check_shapes: a generator output [8, 3] against real data [8, 2] */
    int three = 3;
    vg_gan_model_opts mo = {"G2", "D2", false};
    CHECK_CODE(vg_gan_model_build(g, dense_gen, &three, mean_disc, NULL, real, &noise, 1, &mo, &m, &st),
               VG_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(st.msg, "Generator output shape ((8, 3)) must be the same shape as real data ((8, 2)).");
    CHECK(m.generator_variables == NULL && m.generated_data.op == NULL);
    /* check_shapes=False: the same model is accepted */
    vg_gan_model_opts mo3 = {"G3", "D3", true};
    CHECK_OK(vg_gan_model_build(g, dense_gen, &three, mean_disc, NULL, real, &noise, 1, &mo3, &m, &st), &st);
    CHECK(m.ngenerator_variables == 2 && m.ndiscriminator_variables == 2);
    vg_gan_model_free(&m);
    vg_graph_free(g);
}

/* gan_train_ops: each train op updates its own side; the global step moves only through
 * global_step_inc_op (TF's generator/discriminator create_train_op get global_step=None). */
static void test_train_ops(void) {
    vg_status st;
    vg_output real, noise;
    vg_gan_model m;
    vg_graph *g = dense_gan_build(&real, &noise, &m);
    vg_gan_loss l = vg_gan_loss_build(g, &m, VG_GAN_LOSS_MODIFIED, VG_GAN_LOSS_MODIFIED, NULL);
    CHECK(l.generator_loss.op && l.discriminator_loss.op);
    vg_optimizer *go = vg_optimizer_new_sgd(0.1), *dopt = vg_optimizer_new_adam(0.01, 0.9, 0.999, 1e-8);
    vg_gan_train_ops ops;
    CHECK_CODE(vg_gan_train_ops_build(g, &m, &l, go, go, NULL, &ops, &st), VG_INVALID_ARGUMENT);
    CHECK_OK(vg_gan_train_ops_build(g, &m, &l, go, dopt, NULL, &ops, &st), &st);
    CHECK_STR_CONTAINS(vg_op_name(ops.generator_train_op.op), "generator_train/train_op/");
    CHECK_STR_CONTAINS(vg_op_name(ops.discriminator_train_op.op), "discriminator_train/train_op/");
    CHECK(strcmp(vg_op_name(ops.global_step_inc_op.op), "AssignAdd") == 0);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_op *init = vg_global_variables_initializer(g);
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    vg_output gk = m.generator_variables[0], dk = m.discriminator_variables[0];
    vg_output gs = vg_get_or_create_global_step(g);
    vg_output f[3] = {gk, dk, gs};
    vg_tensor *before[3] = {0}, *after[3] = {0}, *tmp = NULL;
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, f, before, 3, NULL, 0, NULL, &st), &st);
    CHECK_OK(vg_session_run1(s, ops.generator_train_op, &tmp, &st), &st);
    vg_tensor_free(tmp);
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, f, after, 3, NULL, 0, NULL, &st), &st);
    bool gchanged = false, dchanged = false;
    for (int64_t i = 0; before[0] && i < vg_tensor_num_elements(before[0]); i++)
        gchanged |= ((float *)vg_tensor_data(before[0]))[i] != ((float *)vg_tensor_data(after[0]))[i];
    for (int64_t i = 0; before[1] && i < vg_tensor_num_elements(before[1]); i++)
        dchanged |= ((float *)vg_tensor_data(before[1]))[i] != ((float *)vg_tensor_data(after[1]))[i];
    CHECK(gchanged && !dchanged);
    CHECK(after[2] && vg_tensor_scalar(after[2]) == 0.0);
    for (int i = 0; i < 3; i++) vg_tensor_free(before[i]), vg_tensor_free(after[i]), before[i] = after[i] = NULL;
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, f, before, 3, NULL, 0, NULL, &st), &st);
    CHECK_OK(vg_session_run1(s, ops.discriminator_train_op, &tmp, &st), &st);
    vg_tensor_free(tmp);
    CHECK_OK(vg_session_run1(s, ops.global_step_inc_op, &tmp, &st), &st);
    CHECK(tmp && vg_tensor_scalar(tmp) == 1.0);
    vg_tensor_free(tmp);
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, f, after, 3, NULL, 0, NULL, &st), &st);
    gchanged = dchanged = false;
    for (int64_t i = 0; before[0] && i < vg_tensor_num_elements(before[0]); i++)
        gchanged |= ((float *)vg_tensor_data(before[0]))[i] != ((float *)vg_tensor_data(after[0]))[i];
    for (int64_t i = 0; before[1] && i < vg_tensor_num_elements(before[1]); i++)
        dchanged |= ((float *)vg_tensor_data(before[1]))[i] != ((float *)vg_tensor_data(after[1]))[i];
    CHECK(!gchanged && dchanged);
    CHECK(after[2] && vg_tensor_scalar(after[2]) == 1.0);
    for (int i = 0; i < 3; i++) vg_tensor_free(before[i]), vg_tensor_free(after[i]);
    vg_session_free(s);
    /* _get_update_ops: an update op outside both scopes is refused */
    vg_variable v = vg_variable_new(g, "outside", vg_const_f32(g, 0.0f, "z"), 0);
    vg_graph_add_to_collection(g, VG_UPDATE_OPS, vg_assign_add(g, v.ref, vg_const_f32(g, 1.0f, "one"), "stray_update"));
    vg_optimizer *go2 = vg_optimizer_new_sgd(0.1), *do2 = vg_optimizer_new_sgd(0.1);
    CHECK_STATUS(vg_gan_train_ops_build(g, &m, &l, go2, do2, NULL, &ops, &st), &st, VG_INVALID_ARGUMENT,
                 "There are unused update ops: {stray_update}");
    vg_optimizer_free(go), vg_optimizer_free(dopt), vg_optimizer_free(go2), vg_optimizer_free(do2);
    vg_gan_model_free(&m);
    vg_graph_free(g);
}

/* The options of a GAN training run: checkpoints in dir, no step counter, and the hooks
 * StopAtStepHook(last_step) (made into hooks[0]) and mine (copied to hooks[1]). */
static vg_mts_options run_options(const char *dir, int64_t last_step, vg_hook hooks[2], vg_hook mine) {
    vg_status st;
    CHECK_OK(vg_stop_at_step_hook(last_step, -1, &hooks[0], &st), &st);
    hooks[1] = mine;
    vg_mts_options o = {0};
    o.checkpoint_dir = dir;
    o.hooks = hooks;
    o.nhooks = 2;
    o.no_step_counter = true;
    return o;
}

/* RunTrainOpsHook / get_sequential_train_hooks / get_joint_train_hooks / gan_train:
 * counters stand in for the train ops, so the number of runs is exact. */
typedef struct counters {
    vg_output cg, cd, gs;
    double g, d, step;
} counters;

static vg_code read_counters(void *p, vg_session *s, vg_status *st) {
    counters *c = p;
    if (!s) return VG_OK;
    vg_output f[3] = {c->cg, c->cd, c->gs};
    vg_tensor *t[3] = {NULL, NULL, NULL};
    vg_code rc = vg_session_run(s, NULL, NULL, NULL, 0, f, t, 3, NULL, 0, NULL, st);
    if (!rc) c->g = vg_tensor_scalar(t[0]), c->d = vg_tensor_scalar(t[1]), c->step = vg_tensor_scalar(t[2]);
    for (int i = 0; i < 3; i++) vg_tensor_free(t[i]);
    return rc;
}

static void test_hooks_and_gan_train(void) {
    for (int joint = 0; joint < 2; joint++) {
        char dir[64];
        tu_mkdtemp(dir, sizeof dir, "gan");
        vg_graph *g = vg_graph_new();
        vg_status st;
        vg_gan_train_ops ops;
        counters c = {0};
        vg_variable vg_ = vg_variable_new(g, "gen_count", vg_const_f32(g, 0.0f, "z"), 0);
        vg_variable vd = vg_variable_new(g, "dis_count", vg_const_f32(g, 0.0f, "z"), 0);
        ops.generator_train_op = vg_assign_add(g, vg_.ref, vg_const_f32(g, 1.0f, "one"), "gen_step");
        ops.discriminator_train_op = vg_assign_add(g, vd.ref, vg_const_f32(g, 1.0f, "one"), "dis_step");
        c.gs = vg_get_or_create_global_step(g);
        ops.global_step_inc_op = vg_assign_add(g, c.gs, vg_const_fill(g, VG_INT64, NULL, 0, 1, "v"), "AssignAdd");
        c.cg = vg_.ref;
        c.cd = vd.ref;
        vg_gan_train_steps steps = {2, 3};
        vg_hook hooks[2];
        vg_mts_options o = run_options(dir, 4, hooks, (vg_hook){.end = read_counters, .payload = &c});
        double last = 0;
        if (!joint) {
            CHECK_OK(vg_gan_train(g, &ops, &steps, &o, &last, &st), &st);
        } else {
            /* gan_train with get_joint_train_hooks: the hooks passed by hand, the train op
             * the increment (contrib.training.train as gan_train calls it) */
            vg_hook all[5];
            memcpy(all, hooks, sizeof hooks);
            CHECK_OK(vg_gan_joint_train_hooks(&ops, &steps, all + 2, &st), &st);
            o.hooks = all;
            o.nhooks = 5;
            CHECK_OK(vg_training_train(g, ops.global_step_inc_op, &o, &last, &st), &st);
        }
        CHECK_NEAR(last, 4.0, 0);
        CHECK_NEAR(c.step, 4.0, 0);
        CHECK_NEAR(c.g, 8.0, 0);   /* 4 steps x 2 generator runs */
        CHECK_NEAR(c.d, 12.0, 0);  /* 4 steps x 3 discriminator runs */
        vg_graph_free(g);
        tu_rmrf(dir);
    }
    /* argument checks */
    vg_status st;
    vg_hook h;
    vg_output none = {NULL, 0};
    CHECK_CODE(vg_gan_run_train_ops_hook(&none, 1, 1, &h, &st), VG_INVALID_ARGUMENT);
    CHECK_CODE(vg_gan_run_train_ops_hook(NULL, 1, 1, &h, &st), VG_INVALID_ARGUMENT);
    vg_gan_train_ops empty = {{NULL, 0}, {NULL, 0}, {NULL, 0}};
    vg_hook two[2];
    CHECK_CODE(vg_gan_sequential_train_hooks(&empty, NULL, two, &st), VG_INVALID_ARGUMENT);
}

/* A 1-D Gaussian GAN: data ~ N(4, 0.5), generator G(z) = a z + b from z ~ N(0, 1) (b
 * starts at 0), a small tanh discriminator; modified losses (TF's usual choice), SGD 0.1,
 * 300 steps through gan_train with the sequential hooks. The generator's mean must move
 * from near 0 to within 1 of 4 (over graph seeds 1-12 it ends in [3.4, 4.5]). */
typedef struct gen_mean {
    vg_output mean;
    double first, value;
} gen_mean;

static vg_code read_first_mean(void *p, vg_session *s, vg_coord *coord, vg_status *st) {
    (void)coord;
    gen_mean *m = p;
    vg_tensor *t = NULL;
    vg_code rc = vg_session_run1(s, m->mean, &t, st);
    if (!rc) m->first = vg_tensor_scalar(t);
    vg_tensor_free(t);
    return rc;
}

static vg_code read_mean(void *p, vg_session *s, vg_status *st) {
    gen_mean *m = p;
    vg_tensor *t = NULL;
    if (!s) return VG_OK;
    vg_code rc = vg_session_run1(s, m->mean, &t, st);
    if (!rc) m->value = vg_tensor_scalar(t);
    vg_tensor_free(t);
    return rc;
}

static vg_output gen1(vg_graph *g, const vg_output *in, int n, void *p) {
    (void)n, (void)p;
    return vg_layers_dense(g, in[0], 1, VG_ACT_NONE, NULL);
}

static vg_output disc1(vg_graph *g, vg_output data, const vg_output *in, int n, void *p) {
    (void)in, (void)n, (void)p;
    vg_output h = vg_layers_dense(g, data, 8, VG_ACT_TANH, NULL);
    return vg_layers_dense(g, h, 1, VG_ACT_NONE, NULL);
}

static void test_gaussian_gan(void) {
    char dir[64];
    tu_mkdtemp(dir, sizeof dir, "gan1d");
    vg_graph *g = vg_graph_new();
    vg_graph_set_seed(g, 7);
    vg_status st;
    double sv[2] = {64, 1};
    int64_t two = 2;
    vg_output shape = vg_const_values(g, VG_INT32, sv, 2, &two, 1, &two, 1, false, "shape");
    vg_output real = vg_random_normal_dist(g, shape, 4.0, 0.5, VG_FLOAT, 1, "real");
    vg_output noise = vg_random_normal_dist(g, shape, 0.0, 1.0, VG_FLOAT, 2, "noise");
    vg_gan_model m;
    CHECK_OK(vg_gan_model_build(g, gen1, NULL, disc1, NULL, real, &noise, 1, NULL, &m, &st), &st);
    vg_gan_loss l = vg_gan_loss_build(g, &m, VG_GAN_LOSS_MODIFIED, VG_GAN_LOSS_MODIFIED, NULL);
    vg_optimizer *go = vg_optimizer_new_sgd(0.1), *dopt = vg_optimizer_new_sgd(0.1);
    vg_gan_train_ops ops;
    CHECK_OK(vg_gan_train_ops_build(g, &m, &l, go, dopt, NULL, &ops, &st), &st);
    gen_mean gm = {vg_reduce_mean(g, m.generated_data, NULL, -1, false, "gen_mean"), NAN, NAN};
    vg_hook hooks[2];
    vg_mts_options o =
        run_options(dir, 300, hooks, (vg_hook){.after_create_session = read_first_mean, .end = read_mean, .payload = &gm});
    double step = 0;
    CHECK_OK(vg_gan_train(g, &ops, NULL, &o, &step, &st), &st);
    CHECK_NEAR(step, 300.0, 0);
    fprintf(stderr, "  generator mean %.3f at the start, %.3f after 300 steps (data mean 4)\n", gm.first, gm.value);
    CHECK(fabs(gm.first) < 1.0);
    CHECK(fabs(gm.value - 4.0) < 1.0);
    /* a checkpoint of step 300 was written, with TF's variable names */
    char ck[256];
    snprintf(ck, sizeof ck, "%s/model.ckpt-300.index", dir);
    CHECK(access(ck, F_OK) == 0);
    vg_optimizer_free(go), vg_optimizer_free(dopt);
    vg_gan_model_free(&m);
    vg_graph_free(g);
    tu_rmrf(dir);
}

int main(void) {
    RUN_TEST(test_losses_tf);
    RUN_TEST(test_gradient_penalty);
    RUN_TEST(test_gan_model);
    RUN_TEST(test_train_ops);
    RUN_TEST(test_hooks_and_gan_train);
    RUN_TEST(test_gaussian_gan);
    TEST_MAIN_END();
}
