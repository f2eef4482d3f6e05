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
#include "synthetic_fit.h"
#include "vigil/vigil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define NPOINTS 512
#define HIDDEN 16
#define STEPS 600
#define LOSS_TARGET 0.05

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static double uniform(void) { return ((double)ex_lcg53(&rng_state) + 0.5) / (double)(1ull << 53); }
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

static double accuracy(const vg_tensor *logits, const int32_t *y) {
    const float *l = vg_tensor_data(logits);
    int ok = 0;
    for (int i = 0; i < NPOINTS; i++) ok += (l[2 * i + 1] > l[2 * i]) == (y[i] == 1);
    return (double)ok / NPOINTS;
}

static float xs[NPOINTS * 2];
static int32_t ys[NPOINTS];

static void report(int step, double loss, vg_tensor *const *fetched) {
    printf("step %d loss %.6f accuracy %.3f\n", step, loss, accuracy(fetched[1], ys));
}

int main(void) {
    make_data(xs, ys);

    vg_output x, y;
    vg_graph *g = ex_graph_xy(&x, &y);
    if (!g) return 1;
    vg_graph_set_seed(g, 1234);
    vg_output h1 = dense(g, x, 2, HIDDEN, true, "dense");
    vg_output h2 = dense(g, h1, HIDDEN, HIDDEN, true, "dense_1");
    vg_output logits = dense(g, h2, HIDDEN, 2, false, "dense_2");
    vg_output loss;
    vg_op *train = ex_xent_train_op(g, logits, y, vg_optimizer_new_adam(0.01, 0.9, 0.999, 1e-8), &loss);
    vg_session *s = NULL;
    vg_tensor *xt = NULL, *yt = NULL;
    if (ex_start("mlp_synthetic", g, (ex_batch){xs, ys, NPOINTS}, &s, &xt, &yt)) return 1;
    vg_output fetches[2] = {loss, logits};
    double last;
    if (ex_fit("mlp_synthetic", s, x, y, xt, yt, fetches, 2, train, STEPS, 100, report, &last)) return 1;
    return ex_finish("mlp_synthetic", last, LOSS_TARGET, g, s, xt, yt);
}
