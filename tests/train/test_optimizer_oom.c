/* test_optimizer_oom.c - allocation failures (SQLite-style): make allocation N fail
 * for N = 1, 2, ... while building variables + an Adam train op with a global step
 * and report_uninitialized_variables, and while running init and a training step.
 * Every failure must surface as RESOURCE_EXHAUSTED, with no crash and (under ASan)
 * no leak. */
#include "test_util.h"
#include "vigil/vigil.h"

#include "oom_util.h"

typedef struct model {
    vg_op *train, *init;
    vg_output loss, report;
} model;

/* Builds the model; returns the graph's code. */
static vg_code build(vg_graph *g, void *mp) {
    model *m = mp;
    float xv[4] = {1, 2, 3, 4};
    vg_output x = vg_const_array(g, VG_FLOAT, (int64_t[]){2, 2}, 2, xv, "x");
    vg_variable w = vg_get_variable(g, "dense/kernel", VG_FLOAT, (int64_t[]){2, 2}, 2, vg_init_glorot_uniform(1),
                                    VG_VAR_TRAINABLE);
    vg_variable b = vg_get_variable(g, "dense/bias", VG_FLOAT, (int64_t[]){2}, 1, vg_init_zeros(), VG_VAR_TRAINABLE);
    vg_output y = vg_bias_add(g, vg_matmul(g, x, w.read, false, false, NULL), b.read, NULL);
    m->loss = vg_reduce_sum(g, vg_mul(g, y, y, NULL), NULL, -1, false, "loss");
    vg_output gs = vg_get_or_create_global_step(g);
    vg_optimizer *opt = vg_optimizer_new_adam(0.01, 0.9, 0.999, 1e-8);
    if (!opt) return VG_RESOURCE_EXHAUSTED;
    m->train = vg_optimizer_minimize(opt, g, m->loss, NULL, 0, gs, NULL);
    vg_optimizer_free(opt);
    m->init = vg_global_variables_initializer(g);
    m->report = vg_report_uninitialized_variables(g, NULL, 0, NULL);
    return vg_graph_status(g, NULL);
}

static bool complete(const void *mp) {
    const model *m = mp;
    return m->train && m->init && m->report.op;
}

/* init, a training step and the report in a new session (*sp). */
static vg_code run_steps(vg_graph *g, void *mp, vg_session **sp, vg_status *st) {
    model *m = mp;
    return oom_session_steps(g, m->init, m->train, &m->report, 1, sp, st);
}

int main(void) {
    model m;
    return oom_test_main(100000, &m, sizeof m, build, complete, 10, run_steps);
}
