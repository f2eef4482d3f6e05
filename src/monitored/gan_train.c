/*
 * gan_train.c - tf.contrib.gan's training loop pieces (contrib/gan/python/train.py) on
 * the public hook API: RunTrainOpsHook, get_sequential_train_hooks, get_joint_train_hooks
 * and gan_train (contrib.training.train of the global-step increment with those hooks).
 */
#include "vigil/evaluation.h"
#include "vigil/gan.h"
#include "vigil/hooks.h"
#include <stdlib.h>
#include <string.h>

typedef struct run_ops_hook {
    vg_output *ops;
    int n;
    int steps;
} run_ops_hook;

static void run_ops_destroy(void *p) {
    run_ops_hook *h = p;
    if (!h) return;
    free(h->ops);
    free(h);
}

/* before_run: for _ in range(train_steps): run_context.session.run(train_ops) */
static vg_code run_ops_before(void *p, vg_run_context *ctx, vg_run_args *args, vg_status *st) {
    (void)args;
    run_ops_hook *h = p;
    vg_session *s = vg_run_context_session(ctx);
    vg_tensor *outs[8];
    vg_tensor **o = h->n <= 8 ? outs : calloc((size_t)h->n, sizeof *o);
    if (!o) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "RunTrainOpsHook: out of memory");
    vg_code c = VG_OK;
    for (int i = 0; c == VG_OK && i < h->steps; i++) {
        memset(o, 0, (size_t)h->n * sizeof *o);
        c = vg_session_run(s, NULL, NULL, NULL, 0, h->ops, o, h->n, NULL, 0, NULL, st);
        for (int k = 0; k < h->n; k++) vg_tensor_free(o[k]);
    }
    if (o != outs) free(o);
    return c;
}

vg_code vg_gan_run_train_ops_hook(const vg_output *train_ops, int ntrain_ops, int train_steps, vg_hook *out,
                                  vg_status *st) {
    if (out) memset(out, 0, sizeof *out);
    if (!out || ntrain_ops < 0 || (ntrain_ops > 0 && !train_ops) || train_steps < 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "RunTrainOpsHook: train ops and a train_steps >= 0 are "
                             "required");
    for (int i = 0; i < ntrain_ops; i++)
        if (!train_ops[i].op) return vg_status_set(st, VG_INVALID_ARGUMENT, "RunTrainOpsHook: train op %d is NULL", i);
    run_ops_hook *h = calloc(1, sizeof *h);
    if (h && ntrain_ops > 0) h->ops = malloc((size_t)ntrain_ops * sizeof *h->ops);
    if (!h || (ntrain_ops > 0 && !h->ops)) {
        run_ops_destroy(h);
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "RunTrainOpsHook: out of memory");
    }
    if (ntrain_ops > 0) memcpy(h->ops, train_ops, (size_t)ntrain_ops * sizeof *train_ops);
    h->n = ntrain_ops;
    h->steps = ntrain_ops > 0 ? train_steps : 0;
    out->name = "RunTrainOpsHook";
    out->before_run = run_ops_before;
    out->destroy = run_ops_destroy;
    out->payload = h;
    return VG_OK;
}

/* What get_sequential_train_hooks and get_joint_train_hooks (what) check first: out
 * (n hooks, zeroed here), the ops and the steps; *s the steps (1 and 1 by default). */
static vg_code check_ops(const char *what, const vg_gan_train_ops *ops, const vg_gan_train_steps *steps,
                         vg_hook *out, int n, vg_gan_train_steps *s, vg_status *st) {
    if (!out) return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: out is NULL", what);
    memset(out, 0, (size_t)n * sizeof *out);
    if (!ops || !ops->generator_train_op.op || !ops->discriminator_train_op.op)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "GAN train hooks: built GAN train ops are required");
    if (steps && (steps->generator_train_steps < 0 || steps->discriminator_train_steps < 0))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "GANTrainSteps must not be negative");
    *s = steps ? *steps : (vg_gan_train_steps){1, 1};
    return VG_OK;
}

vg_code vg_gan_sequential_train_hooks(const vg_gan_train_ops *ops, const vg_gan_train_steps *steps, vg_hook out[2],
                                      vg_status *st) {
    vg_gan_train_steps s;
    vg_code c = check_ops("get_sequential_train_hooks", ops, steps, out, 2, &s, st);
    if (c) return c;
    c = vg_gan_run_train_ops_hook(&ops->generator_train_op, 1, s.generator_train_steps, &out[0], st);
    if (!c) c = vg_gan_run_train_ops_hook(&ops->discriminator_train_op, 1, s.discriminator_train_steps, &out[1], st);
    if (c) vg_hook_free(&out[0]);
    return c;
}

vg_code vg_gan_joint_train_hooks(const vg_gan_train_ops *ops, const vg_gan_train_steps *steps, vg_hook out[3],
                                 vg_status *st) {
    vg_gan_train_steps s;
    vg_code c = check_ops("get_joint_train_hooks", ops, steps, out, 3, &s, st);
    if (c) return c;
    int both = s.generator_train_steps < s.discriminator_train_steps ? s.generator_train_steps
                                                                     : s.discriminator_train_steps;
    vg_output gd[2] = {ops->generator_train_op, ops->discriminator_train_op};
    c = vg_gan_run_train_ops_hook(gd, 2, both, &out[0], st);
    if (!c) c = vg_gan_run_train_ops_hook(&gd[0], 1, s.generator_train_steps - both, &out[1], st);
    if (!c) c = vg_gan_run_train_ops_hook(&gd[1], 1, s.discriminator_train_steps - both, &out[2], st);
    if (c) {
        vg_hook_free(&out[0]);
        vg_hook_free(&out[1]);
    }
    return c;
}

vg_code vg_gan_train(vg_graph *g, const vg_gan_train_ops *ops, const vg_gan_train_steps *steps,
                     const vg_mts_options *o, double *global_step, vg_status *st) {
    vg_mts_options mo = o ? *o : (vg_mts_options){0};
    int nuser = mo.hooks ? mo.nhooks : 0;
    vg_hook *all = calloc((size_t)nuser + 2, sizeof *all);
    vg_code c = VG_OK;
    if (!all) c = vg_status_set(st, VG_RESOURCE_EXHAUSTED, "gan_train: out of memory");
    else if (!g || !ops || !ops->global_step_inc_op.op)
        c = vg_status_set(st, VG_INVALID_ARGUMENT, "gan_train: a graph and built GAN train ops are required");
    if (!c) c = vg_gan_sequential_train_hooks(ops, steps, all + nuser, st);
    if (c) {   /* the caller's hooks are owned by the call */
        for (int i = 0; i < nuser; i++) {
            vg_hook h = mo.hooks[i];
            vg_hook_free(&h);
        }
        for (int i = 0; i < mo.nchief_only_hooks && mo.chief_only_hooks; i++) {
            vg_hook h = mo.chief_only_hooks[i];
            vg_hook_free(&h);
        }
        free(all);
        return c;
    }
    if (nuser) memcpy(all, mo.hooks, (size_t)nuser * sizeof *all);
    mo.hooks = all;
    mo.nhooks = nuser + 2;
    c = vg_training_train(g, ops->global_step_inc_op, &mo, global_step, st);
    free(all);
    return c;
}
