/* bench_sparse_update.c - training-step time of an embedding lookup trained with
 * Adagrad: the sparse path (Gather's gradient -> Unique + UnsortedSegmentSum +
 * SparseApplyAdagrad on the touched rows) against the dense path (GATE_GRAPH passes
 * the gradient through tuple, so the optimizer sees a dense tensor and runs
 * ApplyAdagrad on the whole table). Table [rows, dim] float32, batch ids drawn once
 * (fixed seed), loss = sum(gather(table, ids) * W).
 *
 * Usage: bench_sparse_update [--rows N] [--dim D] [--batch B] [--steps S]
 * Prints one JSON line with the median step time (ms) of each path. */
#include "bench_util.h"
#include "vigil/vigil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double run(int64_t rows, int64_t dim, int64_t batch, int steps, bool sparse, bool *took_sparse) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    int64_t td[2] = {rows, dim}, wd[2] = {batch, dim};
    vg_variable table = vg_get_variable(g, "embedding", VG_FLOAT, td, 2, vg_init_random_uniform(-0.1, 0.1, 1),
                                        VG_VAR_TRAINABLE);
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)batch);
    unsigned s = 12345;
    for (int64_t i = 0; i < batch; i++) {
        s = s * 1103515245u + 12345u;
        ids[i] = (int32_t)((s >> 8) % (unsigned)rows);
    }
    vg_output idx = vg_const_array(g, VG_INT32, &batch, 1, ids, "ids");
    free(ids);
    vg_output w = vg_const_fill(g, VG_FLOAT, wd, 2, 0.01, "W");
    vg_output emb = vg_gather(g, table.read, idx, 0, "embedding_lookup");
    vg_output loss = vg_reduce_sum(g, vg_mul(g, emb, w, NULL), NULL, -1, false, "loss");
    vg_optimizer *opt = vg_optimizer_new_adagrad(0.1, 0.1);
    if (!sparse) vg_optimizer_set_gate_gradients(opt, VG_GATE_GRAPH);
    vg_op *train = vg_optimizer_minimize(opt, g, loss, NULL, 0, vg_out(NULL, 0), NULL);
    vg_optimizer_free(opt);
    vg_op *init = vg_global_variables_initializer(g);
    if (!train || !init) {
        vg_graph_status(g, &st);
        fprintf(stderr, "bench_sparse_update: %s\n", st.msg);
        exit(1);
    }
    *took_sparse = vg_graph_op_by_name(g, "Adagrad/update_embedding/SparseApplyAdagrad") != NULL;
    vg_session *sess = vg_session_new(g, NULL, &st);
    if (!sess || vg_session_run_targets(sess, &init, 1, &st)) {
        fprintf(stderr, "bench_sparse_update: %s\n", st.msg);
        exit(1);
    }
    double *t = malloc(sizeof(double) * (size_t)steps);
    for (int i = -3; i < steps; i++) {
        double t0 = now_ms();
        if (vg_session_run_targets(sess, &train, 1, &st)) {
            fprintf(stderr, "bench_sparse_update: %s\n", st.msg);
            exit(1);
        }
        if (i >= 0) t[i] = now_ms() - t0;
    }
    qsort(t, (size_t)steps, sizeof *t, cmpd);
    double med = t[steps / 2];
    free(t);
    vg_session_free(sess);
    vg_graph_free(g);
    return med;
}

int main(int argc, char **argv) {
    int64_t rows = 100000, dim = 64, batch = 256;
    int steps = 30;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--rows")) rows = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--dim")) dim = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--batch")) batch = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--steps")) steps = atoi(argv[i + 1]);
    }
    if (rows < 1 || dim < 1 || batch < 1 || steps < 1) {
        fprintf(stderr, "usage: bench_sparse_update [--rows N] [--dim D] [--batch B] [--steps S]\n");
        return 2;
    }
    bool s1 = false, s2 = false;
    double sparse = run(rows, dim, batch, steps, true, &s1);
    double dense = run(rows, dim, batch, steps, false, &s2);
    printf("{\"bench\":\"sparse_update\",\"rows\":%lld,\"dim\":%lld,\"batch\":%lld,\"steps\":%d,"
           "\"sparse_ms\":%.3f,\"dense_ms\":%.3f,\"sparse_path\":%s,\"dense_path\":%s}\n",
           (long long)rows, (long long)dim, (long long)batch, steps, sparse, dense, s1 ? "true" : "false",
           s2 ? "false" : "true");
    return s1 && !s2 ? 0 : 1;
}
