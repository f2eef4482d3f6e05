/* graph_fixture.h - small model graphs shared by the tests of tests/graph. */
#ifndef VG_GRAPH_FIXTURE_H
#define VG_GRAPH_FIXTURE_H
#include "test_util.h"
#include "vigil/vigil.h"

/* The y = x w + b regression of TF's meta-graph tests: placeholders "x" and "y" [-1, 1],
 * variables "w" [1, 1] (random uniform in [-1, 1) with seed) and "b" [1] (zeros), the
 * global step, "y_hat" = x w + b and "loss" = mean((y_hat - y)^2). */
typedef struct linreg_model {
    vg_output x, y, gs, yhat, loss;
    vg_variable w, b;
} linreg_model;

static inline linreg_model linreg_model_build(vg_graph *g, int64_t seed) {
    linreg_model m;
    m.x = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, 1}, 2, "x");
    m.y = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, 1}, 2, "y");
    m.w = vg_get_variable(g, "w", VG_FLOAT, (int64_t[]){1, 1}, 2, vg_init_random_uniform(-1, 1, seed),
                          VG_VAR_TRAINABLE);
    m.b = vg_get_variable(g, "b", VG_FLOAT, (int64_t[]){1}, 1, vg_init_zeros(), VG_VAR_TRAINABLE);
    m.gs = vg_get_or_create_global_step(g);
    m.yhat = vg_add(g, vg_matmul(g, m.x, m.w.read, false, false, NULL), m.b.read, "y_hat");
    m.loss = vg_reduce_mean(g, vg_square(g, vg_sub(g, m.yhat, m.y, NULL), NULL), NULL, -1, false, "loss");
    return m;
}

/* The missing-op contract for a GraphDef (buf[n], in format; read from path) that vigil
 * cannot import: vg_graph_def_missing_ops names at least one op type, and importing it
 * into a fresh graph fails with UNIMPLEMENTED, names every one of those types and leaves
 * the graph empty. Notes on stderr that path is not runnable yet. */
static inline void check_missing_op_contract(const uint8_t *buf, size_t n, vg_import_format format, const char *path) {
    vg_status st;
    char **types = NULL;
    int nt = 0;
    CHECK_OK(vg_graph_def_missing_ops(buf, n, format, &types, NULL, &nt, &st), &st);
    CHECK(nt > 0);
    vg_graph *h = vg_graph_new();
    CHECK_CODE(vg_graph_import_graph_def(h, buf, n, NULL, &st), VG_UNIMPLEMENTED);
    for (int i = 0; i < nt; i++) CHECK_STR_CONTAINS(st.msg, types[i]);
    CHECK_EQ_INT(vg_graph_num_ops(h), 0);
    fprintf(stderr, "note: %s not runnable yet: %s\n", path, st.msg);
    vg_graph_free(h);
    vg_import_free_strings(types, nt);
}

#endif
