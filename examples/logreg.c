/*
 * logreg.c - logistic regression with vigil: two classes of synthetic, linearly
 * separable 2-D points, a softmax (two-class logistic) model trained by plain
 * gradient descent on the full batch.
 *
 *     ./logreg            prints "step N loss L" every 50 steps and "final loss L"
 *
 * Exits 0 when the final loss is below 0.1 (the data are separable, so a working
 * optimizer drives the loss toward zero), 1 otherwise or on any error.
 */
#include "vigil/vigil.h"
#include <stdio.h>
#include <stdlib.h>

#define NPOINTS 256
#define STEPS 400
#define LOSS_TARGET 0.1

/* Small deterministic generator, so every run sees the same data. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static double uniform(void) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) / (double)(1ull << 53);
}

/* Points in [-1,1]^2, class 1 when x0 + 0.5 x1 > 0; points too close to the
 * boundary (margin < 0.1) are redrawn. */
static void make_data(float *x, int32_t *y) {
    for (int i = 0; i < NPOINTS; i++) {
        double a, b, m;
        do {
            a = 2 * uniform() - 1;
            b = 2 * uniform() - 1;
            m = a + 0.5 * b;
        } while (m > -0.1 && m < 0.1);
        x[2 * i] = (float)a;
        x[2 * i + 1] = (float)b;
        y[i] = m > 0;
    }
}

static int fail(const char *what, const vg_status *st) {
    fprintf(stderr, "logreg: %s: %s: %s\n", what, vg_code_name(st->code), st->msg);
    return 1;
}

int main(void) {
    vg_status st;
    static float xs[NPOINTS * 2];
    static int32_t ys[NPOINTS];
    make_data(xs, ys);

    /* model: logits = x W + b; loss = mean sparse softmax cross-entropy */
    vg_graph *g = vg_graph_new();
    if (!g) return 1;
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, 2}, 2, "x");
    vg_output y = vg_placeholder(g, VG_INT32, (int64_t[]){-1}, 1, "y");
    vg_variable_scope_push(g, "logreg", NULL); /* tf.variable_scope: variables "logreg/..." */
    vg_variable w = vg_get_variable(g, "weights", VG_FLOAT, (int64_t[]){2, 2}, 2, vg_init_zeros(), VG_VAR_TRAINABLE);
    vg_variable b = vg_get_variable(g, "bias", VG_FLOAT, (int64_t[]){2}, 1, vg_init_zeros(), VG_VAR_TRAINABLE);
    vg_output logits = vg_bias_add(g, vg_matmul(g, x, w.read, false, false, NULL), b.read, "logits");
    vg_variable_scope_pop(g);
    vg_op *xent = vg_sparse_softmax_xent(g, logits, y, "xent");
    vg_output loss = vg_reduce_mean(g, vg_out(xent, 0), NULL, -1, false, "loss");
    vg_output gs = vg_get_or_create_global_step(g);
    vg_optimizer *opt = vg_optimizer_new_sgd(1.0);
    vg_op *train = vg_optimizer_minimize(opt, g, loss, NULL, 0, gs, NULL);
    vg_optimizer_free(opt);
    vg_op *init = vg_global_variables_initializer(g);
    if (vg_graph_status(g, &st) != VG_OK) return fail("building the graph", &st);

    vg_session *s = vg_session_new(g, NULL, &st);
    if (!s) return fail("creating the session", &st);
    if (vg_session_run_targets(s, &init, 1, &st) != VG_OK) return fail("initializing", &st);

    vg_tensor *xt = vg_tensor_new_from(VG_FLOAT, (int64_t[]){NPOINTS, 2}, 2, xs, sizeof xs, NULL, NULL, &st);
    vg_tensor *yt = vg_tensor_new_from(VG_INT32, (int64_t[]){NPOINTS}, 1, ys, sizeof ys, NULL, NULL, &st);
    if (!xt || !yt) return fail("wrapping the data", &st);
    vg_output feeds[2] = {x, y};
    vg_tensor *vals[2] = {xt, yt};
    double last = 0;
    for (int step = 0; step <= STEPS; step++) {
        vg_tensor *out = NULL;
        /* the loss is computed before this step's update */
        if (vg_session_run(s, NULL, feeds, vals, 2, &loss, &out, 1, &train, step < STEPS, NULL, &st) != VG_OK)
            return fail("training", &st);
        last = vg_tensor_scalar(out);
        vg_tensor_free(out);
        if (step % 50 == 0 && step < STEPS) printf("step %d loss %.6f\n", step, last);
    }
    printf("final loss %.6f\n", last);
    vg_tensor_free(xt);
    vg_tensor_free(yt);
    vg_session_free(s);
    vg_graph_free(g);
    if (!(last < LOSS_TARGET)) {
        fprintf(stderr, "logreg: final loss %.6f is not below %.3f\n", last, LOSS_TARGET);
        return 1;
    }
    return 0;
}
