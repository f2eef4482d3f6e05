/* test_optimizer_oom.c - allocation failures (SQLite-style): make allocation N fail
 * for N = 1, 2, ... while building variables + an Adam train op with a global step
 * and report_uninitialized_variables, and while running init and a training step.
 * Every failure must surface as RESOURCE_EXHAUSTED, with no crash and (under ASan)
 * no leak. */
#include "test_util.h"
#include "vigil/vigil.h"

#include "oom_util.h"

/* Builds the model; returns the graph's code. */
static vg_code build(vg_graph *g, void *mp) {
    oom_model *m = mp;
    m->nfetch = 1; /* the report */
    vg_output x = oom_model_input(g);
    vg_variable w = vg_get_variable(g, "dense/kernel", VG_FLOAT, (int64_t[]){2, 2}, 2, vg_init_glorot_uniform(1),
                                    VG_VAR_TRAINABLE);
    vg_variable b = vg_get_variable(g, "dense/bias", VG_FLOAT, (int64_t[]){2}, 1, vg_init_zeros(), VG_VAR_TRAINABLE);
    vg_output y = vg_bias_add(g, vg_matmul(g, x, w.read, false, false, NULL), b.read, NULL);
    vg_output loss = vg_reduce_sum(g, vg_mul(g, y, y, NULL), NULL, -1, false, "loss");
    vg_output gs = vg_get_or_create_global_step(g);
    vg_optimizer *opt = vg_optimizer_new_adam(0.01, 0.9, 0.999, 1e-8);
    if (!opt) return VG_RESOURCE_EXHAUSTED;
    m->train = vg_optimizer_minimize(opt, g, loss, NULL, 0, gs, NULL);
    vg_optimizer_free(opt);
    m->init = vg_global_variables_initializer(g);
    m->fetch[0] = vg_report_uninitialized_variables(g, NULL, 0, NULL);
    return vg_graph_status(g, NULL);
}

int main(void) { return oom_model_main(100000, build, 10); }
