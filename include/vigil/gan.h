/*
 * vigil/gan.h - tf.contrib.gan (TFGAN) of TF 1.15: gan_model, the GAN losses
 * (losses_impl.py), gan_loss, gan_train_ops, RunTrainOpsHook / get_sequential_train_hooks /
 * get_joint_train_hooks and gan_train (contrib/gan/python/train.py). The model, losses and
 * train ops are graph builders (src/train/gan.c); the hooks and gan_train run on a
 * MonitoredTrainingSession (src/monitored/gan_train.c).
 *
 * The four TFGAN steps:
 *
 *     #include <vigil/vigil.h>
 *     static vg_output gen(vg_graph *g, const vg_output *in, int n, void *p) {
 *         (void)n, (void)p;
 *         return vg_layers_dense(g, in[0], 1, VG_ACT_NONE, NULL);
 *     }
 *     static vg_output disc(vg_graph *g, vg_output data, const vg_output *in, int n, void *p) {
 *         (void)in, (void)n, (void)p;
 *         return vg_layers_dense(g, data, 1, VG_ACT_NONE, NULL);
 *     }
 *     int train(vg_graph *g, vg_output real, vg_output noise, const char *logdir) {
 *         vg_status st;
 *         vg_gan_model m;
 *         if (vg_gan_model_build(g, gen, NULL, disc, NULL, real, &noise, 1, NULL, &m, &st)) return st.code;
 *         vg_gan_loss l = vg_gan_loss_build(g, &m, VG_GAN_LOSS_MODIFIED, VG_GAN_LOSS_MODIFIED, NULL);
 *         vg_optimizer *go = vg_optimizer_new_sgd(0.05), *dopt = vg_optimizer_new_sgd(0.05);
 *         vg_gan_train_ops ops;
 *         vg_code c = vg_gan_train_ops_build(g, &m, &l, go, dopt, NULL, &ops, &st);
 *         vg_hook stop;
 *         if (!c) c = vg_stop_at_step_hook(200, -1, &stop, &st);
 *         vg_mts_options o = {0};
 *         o.checkpoint_dir = logdir; o.hooks = &stop; o.nhooks = 1;
 *         if (!c) c = vg_gan_train(g, &ops, NULL, &o, NULL, &st);
 *         vg_optimizer_free(go), vg_optimizer_free(dopt), vg_gan_model_free(&m);
 *         return c;
 *     }
 *
 * On failure the builders that return a vg_output give {NULL, 0} and record the graph's
 * sticky error (INVALID_ARGUMENT for incompatible shapes, RESOURCE_EXHAUSTED).
 */
#ifndef VIGIL_GAN_H
#define VIGIL_GAN_H

#include "graph.h"
#include "losses.h"
#include "monitored.h"
#include "optimizer.h"
#include "variable_scope.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- gan_model ------------------------------------------------------------ */
/* generator_fn(generator_inputs) and discriminator_fn(data, generator_inputs), as TFGAN's
 * Python callables: build ops in g under the current variable scope and return the output
 * ({NULL, 0} on failure, with the graph's error recorded). */
typedef vg_output (*vg_gan_generator_fn)(vg_graph *g, const vg_output *inputs, int ninputs, void *payload);
typedef vg_output (*vg_gan_discriminator_fn)(vg_graph *g, vg_output data, const vg_output *generator_inputs,
                                             int ninputs, void *payload);

/* GANModel. Arrays are owned by the struct (vg_gan_model_free); scopes by the graph. */
typedef struct vg_gan_model {
    vg_output *generator_inputs;
    int ngenerator_inputs;
    vg_output generated_data;
    vg_output *generator_variables;       /* trainable variables under generator_scope */
    int ngenerator_variables;
    vg_vscope *generator_scope;
    vg_gan_generator_fn generator_fn;
    void *generator_payload;
    vg_output real_data;
    vg_output discriminator_real_outputs;
    vg_output discriminator_gen_outputs;
    vg_output *discriminator_variables;   /* trainable variables under discriminator_scope */
    int ndiscriminator_variables;
    vg_vscope *discriminator_scope;
    vg_gan_discriminator_fn discriminator_fn;
    void *discriminator_payload;
} vg_gan_model;

typedef struct vg_gan_model_opts {
    const char *generator_scope;          /* NULL: "Generator" */
    const char *discriminator_scope;      /* NULL: "Discriminator" */
    bool no_check_shapes;                 /* TF's check_shapes=False */
} vg_gan_model_opts;

/* tfgan.gan_model(generator_fn, discriminator_fn, real_data, generator_inputs,
 * generator_scope, discriminator_scope, check_shapes): the generator under the variable
 * scope "Generator", the discriminator under "Discriminator" on the generated data, then
 * again, reusing its variables (reuse=True), on the real data; the variable lists are the
 * scopes' trainable variables. *out is filled (free it with vg_gan_model_free). Fails with
 * INVALID_ARGUMENT (NULL arguments; "Generator output shape (...) must be the same shape
 * as real data (...)." when check_shapes; a callback's failure), RESOURCE_EXHAUSTED; *out
 * is then zeroed. */
VG_API vg_code vg_gan_model_build(vg_graph *g, vg_gan_generator_fn generator_fn, void *generator_payload,
                                  vg_gan_discriminator_fn discriminator_fn, void *discriminator_payload,
                                  vg_output real_data, const vg_output *generator_inputs, int ninputs,
                                  const vg_gan_model_opts *opts, vg_gan_model *out, vg_status *st);
/* Frees the arrays of m and zeroes it (the ops stay in the graph). NULL is a no-op. */
VG_API void vg_gan_model_free(vg_gan_model *m);

/* ---- losses (losses_impl.py) ------------------------------------------------ */
/* Options shared by the losses; zeroed (or NULL) gives TF's defaults. Generator losses
 * use weights, discriminator losses real_weights and generated_weights ({NULL, 0}: 1.0;
 * else broadcastable to the outputs). */
typedef struct vg_gan_loss_opts {
    vg_output weights;
    vg_output real_weights;
    vg_output generated_weights;
    const char *scope;            /* NULL: the loss's default name scope */
    const char *loss_collection;  /* NULL: "losses"; "" adds to none */
    vg_reduction reduction;       /* SUM_BY_NONZERO_WEIGHTS */
    bool add_summaries;           /* scalar summaries as TF names them */
} vg_gan_loss_opts;

/* wasserstein_generator_loss: -D(G(z)), weighted and reduced ("generator_wasserstein_loss"). */
VG_API vg_output vg_gan_wasserstein_generator_loss(vg_graph *g, vg_output discriminator_gen_outputs,
                                                   const vg_gan_loss_opts *o);
/* wasserstein_discriminator_loss: loss(D(G(z))) - loss(D(x)) ("discriminator_wasserstein_loss"). */
VG_API vg_output vg_gan_wasserstein_discriminator_loss(vg_graph *g, vg_output discriminator_real_outputs,
                                                       vg_output discriminator_gen_outputs, const vg_gan_loss_opts *o);
/* minimax_discriminator_loss (label_smoothing: TF's default 0.25): sigmoid cross-entropy
 * of the real outputs against smoothed ones plus that of the generated outputs against
 * zeros ("discriminator_minimax_loss"). */
VG_API vg_output vg_gan_minimax_discriminator_loss(vg_graph *g, vg_output discriminator_real_outputs,
                                                   vg_output discriminator_gen_outputs, double label_smoothing,
                                                   const vg_gan_loss_opts *o);
/* minimax_generator_loss (label_smoothing: TF's default 0.0): the negated minimax
 * discriminator loss with ones_like(D(G(z))) as the real outputs ("generator_minimax_loss"). */
VG_API vg_output vg_gan_minimax_generator_loss(vg_graph *g, vg_output discriminator_gen_outputs, double label_smoothing,
                                               const vg_gan_loss_opts *o);
/* modified_discriminator_loss: the minimax one under "discriminator_modified_loss"
 * (label_smoothing default 0.25). */
VG_API vg_output vg_gan_modified_discriminator_loss(vg_graph *g, vg_output discriminator_real_outputs,
                                                    vg_output discriminator_gen_outputs, double label_smoothing,
                                                    const vg_gan_loss_opts *o);
/* modified_generator_loss: -log(sigmoid(D(G(z)))) as sigmoid cross-entropy against ones
 * (label_smoothing default 0.0; "generator_modified_loss"). */
VG_API vg_output vg_gan_modified_generator_loss(vg_graph *g, vg_output discriminator_gen_outputs, double label_smoothing,
                                                const vg_gan_loss_opts *o);
/* least_squares_generator_loss: (D(G(z)) - real_label)^2 / 2 (real_label default 1;
 * "lsq_generator_loss"). */
VG_API vg_output vg_gan_least_squares_generator_loss(vg_graph *g, vg_output discriminator_gen_outputs, double real_label,
                                                     const vg_gan_loss_opts *o);
/* least_squares_discriminator_loss: (D(x) - real_label)^2 / 2 + (D(G(z)) - fake_label)^2 / 2
 * (defaults 1, 0; "lsq_discriminator_loss"). */
VG_API vg_output vg_gan_least_squares_discriminator_loss(vg_graph *g, vg_output discriminator_real_outputs,
                                                         vg_output discriminator_gen_outputs, double real_label,
                                                         double fake_label, const vg_gan_loss_opts *o);
/* wasserstein_gradient_penalty(model, epsilon (1e-10), target (1.0), one_sided): the
 * discriminator re-run (reusing its variables) on real + alpha * (generated - real) with
 * alpha ~ U[0, 1) per example; penalty = weighted mean of (sqrt(sum(grad^2) + epsilon) /
 * target - 1)^2 ("wasserstein_gradient_penalty"). The data must have a known rank
 * (INVALID_ARGUMENT "`real_data` can't have unknown rank."). */
VG_API vg_output vg_gan_wasserstein_gradient_penalty(vg_graph *g, const vg_gan_model *m, double epsilon, double target,
                                                     bool one_sided, const vg_gan_loss_opts *o);

/* ---- gan_loss ------------------------------------------------------------------ */
/* The loss functions gan_loss takes (TFGAN's tuple losses, each with its defaults). */
typedef enum vg_gan_loss_kind {
    VG_GAN_LOSS_WASSERSTEIN = 0,  /* gan_loss's default in TF 1.15 */
    VG_GAN_LOSS_MINIMAX,
    VG_GAN_LOSS_MODIFIED,
    VG_GAN_LOSS_LEAST_SQUARES
} vg_gan_loss_kind;

typedef struct vg_gan_loss {
    vg_output generator_loss;
    vg_output discriminator_loss;
} vg_gan_loss;

typedef struct vg_gan_loss_build_opts {
    double gradient_penalty_weight;   /* > 0: + weight * wasserstein_gradient_penalty; 0: none */
    double gradient_penalty_epsilon;  /* 0: 1e-10 */
    bool no_summaries;                /* TF's add_summaries=False (default True) */
} vg_gan_loss_build_opts;

/* tfgan.gan_loss(model, generator_loss_fn, discriminator_loss_fn, gradient_penalty_weight,
 * gradient_penalty_epsilon, add_summaries): each side's loss with its defaults, plus the
 * gradient penalty on the discriminator side, plus each side's regularization losses (the
 * REGULARIZATION_LOSSES under its scope). Negative gradient_penalty_weight is
 * INVALID_ARGUMENT "`gradient_penalty_weight` must be greater than 0. Instead, was W";
 * on failure both outputs are {NULL, 0} with the graph's error. */
VG_API vg_gan_loss vg_gan_loss_build(vg_graph *g, const vg_gan_model *m, vg_gan_loss_kind generator_loss,
                                     vg_gan_loss_kind discriminator_loss, const vg_gan_loss_build_opts *o);

/* ---- gan_train_ops ---------------------------------------------------------------- */
typedef struct vg_gan_train_ops {
    vg_output generator_train_op;      /* the generator loss after one generator update */
    vg_output discriminator_train_op;  /* the discriminator loss after one discriminator update */
    vg_output global_step_inc_op;      /* global_step.assign_add(1) */
} vg_gan_train_ops;

typedef struct vg_gan_train_ops_opts {
    bool no_check_for_unused_update_ops; /* TF's check_for_unused_update_ops=False */
    double clip_gradient_norm;           /* > 0: each gradient clip_by_norm'ed (create_train_op kwargs) */
    bool no_check_numerics;              /* check_numerics=False */
} vg_gan_train_ops_opts;

/* tfgan.gan_train_ops(model, loss, generator_optimizer, discriminator_optimizer,
 * check_for_unused_update_ops): the global step (created if missing) and AssignAdd(1);
 * under the name scopes "generator_train" and "discriminator_train" a
 * contrib.training.create_train_op each, over its side's variables only, with its side's
 * UPDATE_OPS, and without a global step (the train ops leave it alone; gan_train
 * increments it once per step). The optimizers stay the caller's and must differ. Fails
 * with INVALID_ARGUMENT ("There are unused update ops: ..." when UPDATE_OPS holds ops of
 * neither scope and the check is on; NULL arguments; a side with no variables),
 * compute/apply_gradients' errors; *out is then zeroed. */
VG_API vg_code vg_gan_train_ops_build(vg_graph *g, const vg_gan_model *m, const vg_gan_loss *loss,
                                      vg_optimizer *generator_optimizer, vg_optimizer *discriminator_optimizer,
                                      const vg_gan_train_ops_opts *o, vg_gan_train_ops *out, vg_status *st);

/* ---- hooks and gan_train (src/monitored/gan_train.c) -------------------------------- */
/* GANTrainSteps(generator_train_steps, discriminator_train_steps). */
typedef struct vg_gan_train_steps {
    int generator_train_steps;
    int discriminator_train_steps;
} vg_gan_train_steps;

/* RunTrainOpsHook(train_ops, train_steps): before every run, runs the train ops (copied)
 * train_steps times on the raw session (bypassing the hooks). INVALID_ARGUMENT for NULL
 * arguments or negative train_steps. */
VG_API vg_code vg_gan_run_train_ops_hook(const vg_output *train_ops, int ntrain_ops, int train_steps, vg_hook *out,
                                         vg_status *st);
/* get_sequential_train_hooks(train_steps)(train_ops): out[0] runs the generator train op
 * generator_train_steps times, out[1] the discriminator's discriminator_train_steps
 * times. steps NULL: GANTrainSteps(1, 1). */
VG_API vg_code vg_gan_sequential_train_hooks(const vg_gan_train_ops *ops, const vg_gan_train_steps *steps,
                                             vg_hook out[2], vg_status *st);
/* get_joint_train_hooks(train_steps)(train_ops): out[0] runs both ops together
 * min(g, d) times, out[1] the generator's g - min, out[2] the discriminator's d - min. */
VG_API vg_code vg_gan_joint_train_hooks(const vg_gan_train_ops *ops, const vg_gan_train_steps *steps, vg_hook out[3],
                                        vg_status *st);

/* tfgan.gan_train(train_ops, logdir, get_hooks_fn=get_sequential_train_hooks(steps),
 * is_chief, scaffold, hooks, chief_only_hooks, save_checkpoint_secs, save_summaries_steps,
 * config): contrib.training.train (vg_training_train) of global_step_inc_op on a
 * MonitoredTrainingSession with o's options (o->checkpoint_dir is logdir; NULL o: TF's
 * defaults) and the sequential hooks after o's hooks. *global_step (may be NULL) gets the
 * last value of global_step_inc_op (TF's return value). o's hooks are owned by the call
 * (also on failure). Fails as vg_training_train, and with INVALID_ARGUMENT for NULL
 * arguments. */
VG_API vg_code vg_gan_train(vg_graph *g, const vg_gan_train_ops *ops, const vg_gan_train_steps *steps,
                            const vg_mts_options *o, double *global_step, vg_status *st);

#ifdef __cplusplus
}
#endif
#endif
