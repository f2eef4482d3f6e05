/*
 * mlp_synthetic.c - a small multi-layer perceptron trained with Adam on synthetic
 * XOR-like data: four Gaussian clusters around (+-1, +-1), the class is 1 when the
 * two coordinates have different signs. No linear model can separate them; two
 * ReLU layers of 16 units can.
 *
 *     ./mlp_synthetic     prints "step N loss L accuracy A" every 100 steps and
 *                         "final loss L"
 *
 * Exits 0 when the final loss is below 0.05, 1 otherwise or on any error. The graph
 * seed makes the run deterministic.
 */
#include "vigil/vigil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define NPOINTS 512
#define HIDDEN 16
#define STEPS 600
#define LOSS_TARGET 0.05

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static double uniform(void) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return ((double)(rng_state >> 11) + 0.5) / (double)(1ull << 53);
}
static double normal(void) { return sqrt(-2 * log(uniform())) * cos(6.283185307179586 * uniform()); }

static void make_data(float *x, int32_t *y) {
    for (int i = 0; i < NPOINTS; i++) {
        int q = i % 4;
        double cx = (q & 1) ? 1 : -1, cy = (q & 2) ? 1 : -1;
        x[2 * i] = (float)(cx + 0.25 * normal());
        x[2 * i + 1] = (float)(cy + 0.25 * normal());
        y[i] = (cx > 0) != (cy > 0);
    }
}

/* One dense layer as tf.layers.dense builds it: "<name>/kernel" (glorot uniform),
 * "<name>/bias" (zeros), MatMul + BiasAdd, optional ReLU. */
static vg_output dense(vg_graph *g, vg_output x, int64_t in, int64_t out, bool relu, const char *name) {
    vg_variable_scope_push(g, name, NULL); /* variable scope + name scope */
    vg_variable k = vg_get_variable(g, "kernel", VG_FLOAT, (int64_t[]){in, out}, 2, vg_init_glorot_uniform(0),
                                    VG_VAR_TRAINABLE);
    vg_variable b = vg_get_variable(g, "bias", VG_FLOAT, (int64_t[]){out}, 1, vg_init_zeros(), VG_VAR_TRAINABLE);
    vg_output h = vg_bias_add(g, vg_matmul(g, x, k.read, false, false, "MatMul"), b.read, "BiasAdd");
    if (relu) h = vg_relu(g, h, "Relu");
    vg_variable_scope_pop(g);
    return h;
}

static int fail(const char *what, const vg_status *st) {
    fprintf(stderr, "mlp_synthetic: %s: %s: %s\n", what, vg_code_name(st->code), st->msg);
    return 1;
}

static double accuracy(const vg_tensor *logits, const int32_t *y) {
    const float *l = vg_tensor_data(logits);
    int ok = 0;
    for (int i = 0; i < NPOINTS; i++) ok += (l[2 * i + 1] > l[2 * i]) == (y[i] == 1);
    return (double)ok / NPOINTS;
}

int main(void) {
    vg_status st;
    static float xs[NPOINTS * 2];
    static int32_t ys[NPOINTS];
    make_data(xs, ys);

    vg_graph *g = vg_graph_new();
    if (!g) return 1;
    vg_graph_set_seed(g, 1234);
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, 2}, 2, "x");
    vg_output y = vg_placeholder(g, VG_INT32, (int64_t[]){-1}, 1, "y");
    vg_output h1 = dense(g, x, 2, HIDDEN, true, "dense");
    vg_output h2 = dense(g, h1, HIDDEN, HIDDEN, true, "dense_1");
    vg_output logits = dense(g, h2, HIDDEN, 2, false, "dense_2");
    vg_op *xent = vg_sparse_softmax_xent(g, logits, y, "xent");
    vg_output loss = vg_reduce_mean(g, vg_out(xent, 0), NULL, -1, false, "loss");
    vg_output gs = vg_get_or_create_global_step(g);
    vg_optimizer *opt = vg_optimizer_new_adam(0.01, 0.9, 0.999, 1e-8);
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
    vg_output fetches[2] = {loss, logits};
    double last = 0;
    for (int step = 0; step <= STEPS; step++) {
        vg_tensor *out[2] = {NULL, NULL};
        if (vg_session_run(s, NULL, feeds, vals, 2, fetches, out, 2, &train, step < STEPS, NULL, &st) != VG_OK)
            return fail("training", &st);
        last = vg_tensor_scalar(out[0]);
        if (step % 100 == 0 && step < STEPS)
            printf("step %d loss %.6f accuracy %.3f\n", step, last, accuracy(out[1], ys));
        vg_tensor_free(out[0]);
        vg_tensor_free(out[1]);
    }
    printf("final loss %.6f\n", last);
    vg_tensor_free(xt);
    vg_tensor_free(yt);
    vg_session_free(s);
    vg_graph_free(g);
    if (!(last < LOSS_TARGET)) {
        fprintf(stderr, "mlp_synthetic: final loss %.6f is not below %.3f\n", last, LOSS_TARGET);
        return 1;
    }
    return 0;
}
