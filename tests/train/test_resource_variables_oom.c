/* test_resource_variables_oom.c - allocation failures (SQLite-style, as
 * test_optimizer_oom): allocation N fails for N = 1, 2, ... while building resource
 * variables, an Adam train op over two of them and a sparse Momentum update over an
 * embedding, the saver and report_uninitialized_variables, and while running init, a
 * training step, a sparse read and the report. Every failure must surface as
 * RESOURCE_EXHAUSTED, with no crash and (under ASan) no leak. */
#include "test_util.h"
#include "vigil/vigil.h"

#include "oom_util.h"

static vg_code build(vg_graph *g, void *mp) {
    oom_model *m = mp;
    m->nfetch = 2; /* the sparse read, the report */
    vg_output x = oom_model_input(g);
    vg_resource_variable w = vg_resource_variable_new_init(g, "dense/kernel", VG_FLOAT, (int64_t[]){2, 2}, 2,
                                                           vg_init_glorot_uniform(1), VG_VAR_TRAINABLE);
    vg_resource_variable b = vg_resource_variable_new(g, "dense/bias", vg_const_fill(g, VG_FLOAT, (int64_t[]){2}, 1,
                                                                                     0.0, "zeros"),
                                                      VG_VAR_TRAINABLE);
    vg_resource_variable e = vg_resource_variable_new_init(g, "emb", VG_FLOAT, (int64_t[]){4, 2}, 2, vg_init_ones(),
                                                           VG_VAR_TRAINABLE);
    vg_output y = vg_bias_add(g, vg_matmul(g, x, w.value, false, false, NULL), b.value, NULL);
    vg_output ix = vg_const_i32_vec(g, (int32_t[]){1, 3, 1}, 3, "ix");
    vg_output rows = vg_resource_variable_sparse_read(g, e.handle, ix, NULL);
    vg_output loss = vg_add(g, vg_reduce_sum(g, vg_mul(g, y, y, NULL), NULL, -1, false, NULL),
                            vg_reduce_sum(g, rows, NULL, -1, false, NULL), "loss");
    m->fetch[0] = rows;
    vg_output gs = vg_get_or_create_global_step(g);
    vg_optimizer *adam = vg_optimizer_new_adam(0.01, 0.9, 0.999, 1e-8);
    vg_optimizer *mom = vg_optimizer_new_momentum(0.1, 0.9, false);
    if (!adam || !mom) {
        vg_optimizer_free(adam);
        vg_optimizer_free(mom);
        return VG_RESOURCE_EXHAUSTED;
    }
    vg_output dense[2] = {w.handle, b.handle};
    vg_op *t1 = vg_optimizer_minimize(adam, g, loss, dense, 2, gs, NULL);
    vg_op *t2 = vg_optimizer_minimize(mom, g, loss, &e.handle, 1, (vg_output){NULL, 0}, NULL);
    vg_optimizer_free(adam);
    vg_optimizer_free(mom);
    vg_op *both[2] = {t1, t2};
    m->train = t1 && t2 ? vg_group(g, both, 2, "train") : NULL;
    m->init = vg_global_variables_initializer(g);
    m->fetch[1] = vg_report_uninitialized_variables(g, NULL, 0, NULL);
    vg_status st;
    vg_saver_options so = {0};
    vg_saver *sv = vg_graph_status(g, NULL) == VG_OK ? vg_saver_new(g, &so, &st) : NULL;
    vg_saver_free(sv);
    return vg_graph_status(g, NULL);
}

int main(void) { return oom_model_main(200000, build, 100); }
