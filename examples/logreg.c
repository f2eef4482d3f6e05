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
#include "synthetic_fit.h"
#include "vigil/vigil.h"
#include <stdio.h>
#include <stdlib.h>

#define NPOINTS 256
#define STEPS 400
#define LOSS_TARGET 0.1

/* Small deterministic generator, so every run sees the same data. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static double uniform(void) { return (double)ex_lcg53(&rng_state) / (double)(1ull << 53); }

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

/* the loss is computed before this step's update */
static void report(int step, double loss, vg_tensor *const *fetched) { printf("step %d loss %.6f\n", step, loss); }

int main(void) {
    static float xs[NPOINTS * 2];
    static int32_t ys[NPOINTS];
    make_data(xs, ys);

    /* model: logits = x W + b; loss = mean sparse softmax cross-entropy */
    vg_output x, y;
    vg_graph *g = ex_graph_xy(&x, &y);
    if (!g) return 1;
    vg_variable_scope_push(g, "logreg", NULL); /* tf.variable_scope: variables "logreg/..." */
    vg_variable w = vg_get_variable(g, "weights", VG_FLOAT, (int64_t[]){2, 2}, 2, vg_init_zeros(), VG_VAR_TRAINABLE);
    vg_variable b = vg_get_variable(g, "bias", VG_FLOAT, (int64_t[]){2}, 1, vg_init_zeros(), VG_VAR_TRAINABLE);
    vg_output logits = vg_bias_add(g, vg_matmul(g, x, w.read, false, false, NULL), b.read, "logits");
    vg_variable_scope_pop(g);
    vg_output loss;
    vg_op *train = ex_xent_train_op(g, logits, y, vg_optimizer_new_sgd(1.0), &loss);
    vg_session *s = NULL;
    vg_tensor *xt = NULL, *yt = NULL;
    if (ex_start("logreg", g, (ex_batch){xs, ys, NPOINTS}, &s, &xt, &yt)) return 1;
    double last;
    if (ex_fit("logreg", s, x, y, xt, yt, &loss, 1, train, STEPS, 50, report, &last)) return 1;
    return ex_finish("logreg", last, LOSS_TARGET, g, s, xt, yt);
}
