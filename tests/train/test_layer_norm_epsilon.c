/* test_layer_norm_epsilon.c - layer_norm's variance epsilon reaches the computation: a
 * config asking for epsilon 1.0 (vg_layers_apply) or 3.0 (a vg_layer object) normalises
 * by sqrt(variance + epsilon), computed by hand; the default stays TF contrib
 * layer_norm's fixed 1e-12. */
#include "test_util.h"
#include "vigil/vigil.h"
#include <math.h>

static vg_tensor *rows(void) {
    static const float v[8] = {1, 2, 3, 4, -1, -1, 1, 1};
    vg_tensor *t = vg_tensor_new(VG_FLOAT, (int64_t[]){2, 4}, 2, NULL);
    if (t) memcpy(vg_tensor_data(t), v, sizeof v);
    return t;
}

/* Runs y with x fed and checks it against (x - mean) / sqrt(var + eps) per row. */
static void check_rows(vg_graph *g, vg_output x, vg_output y, double eps) {
    vg_status st;
    vg_op *init = vg_global_variables_initializer(g);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK(s != NULL);
    if (!s) return;
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    vg_tensor *xt = rows(), *out = NULL;
    CHECK_OK(vg_session_run(s, NULL, &x, &xt, 1, &y, &out, 1, NULL, 0, NULL, &st), &st);
    if (out) {
        const float *o = vg_tensor_data(out);
        /* row 0: mean 2.5, variance (2.25 + 0.25 + 0.25 + 2.25) / 4 = 1.25 */
        const double r0[4] = {1, 2, 3, 4};
        for (int i = 0; i < 4; i++) CHECK_NEAR(o[i], (r0[i] - 2.5) / sqrt(1.25 + eps), 1e-5);
        /* row 1: mean 0, variance 1 */
        const double r1[4] = {-1, -1, 1, 1};
        for (int i = 0; i < 4; i++) CHECK_NEAR(o[4 + i], r1[i] / sqrt(1.0 + eps), 1e-5);
    }
    vg_tensor_free(out);
    vg_tensor_free(xt);
    vg_session_free(s);
}

static void test_layer_norm_epsilon_functional(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, 4}, 2, "x");
    vg_layer_config c = {.kind = VG_LAYER_LAYER_NORM};
    vg_layer *d = vg_layer_new(&c); /* {0}'s epsilon is contrib layer_norm's 1e-12 */
    CHECK(d != NULL && d->config.epsilon == 1e-12);
    vg_layer_free(d);
    c.epsilon = 1.0; /* (x - 2.5) / 1.5 on the first row: -1, -1/3, 1/3, 1 */
    vg_output y = vg_layers_apply(g, &c, x, vg_out(NULL, 0));
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    check_rows(g, x, y, 1.0);
    vg_graph_free(g);
}

static void test_layer_norm_epsilon_object(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, 4}, 2, "x");
    vg_layer_config c = {.kind = VG_LAYER_LAYER_NORM};
    c.epsilon = 3.0;
    vg_layer *l = vg_layer_new(&c);
    vg_output y = vg_layer_apply(l, g, x, vg_out(NULL, 0));
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    check_rows(g, x, y, 3.0);
    vg_layer_free(l);
    vg_graph_free(g);
}

/* vg_layer_norm (no epsilon argument): TF's 1e-12, so row 1 is exactly -1, -1, 1, 1. */
static void test_layer_norm_default_epsilon(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, 4}, 2, "x");
    vg_output y = vg_layer_norm(g, x, NULL);
    check_rows(g, x, y, 1e-12);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_layer_norm_epsilon_functional);
    RUN_TEST(test_layer_norm_epsilon_object);
    RUN_TEST(test_layer_norm_default_epsilon);
    TEST_MAIN_END();
}
