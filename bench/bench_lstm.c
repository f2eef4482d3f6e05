/* bench_lstm.c - training-step time of an LSTM 128 over 28 steps of 28 inputs, batch 64
 * (time-major [28, 64, 28], LSTMBlockFusedCell = one BlockLSTM op forward and one
 * BlockLSTMGrad backward), the last h through dense 10, sparse softmax cross-entropy,
 * Adam 1e-3: forward + backward + update, fed through placeholders from pre-made random
 * batches; side by side with torch.nn.LSTM of the same size (bench/peers/torch_lstm.py)
 * in the same run, rounds interleaved, at 1 and 2 threads (or --threads N only).
 *
 * Usage: bench_lstm [--threads N] [--steps S] [--rounds R] [--no-peer]
 * Prints one JSON line: per thread count the median over rounds of each side's median
 * ms/step and the ratio vigil/torch (target <= 0.8 at 1 thread). */
#include "bench_util.h"
#include "vigil/vigil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { T = 28, B = 64, IN = 28, H = 128, NB = 16 };

static void die(const char *what, const vg_status *st) {
    fprintf(stderr, "bench_lstm: %s: %s\n", what, st ? st->msg : "");
    exit(1);
}

static double run_peer(int threads, int steps) {
    const char *p = getenv("VG_TORCH_LSTM_PEER");
    if (!p) p = VG_SRCDIR "/bench/peers/torch_lstm.py";
    FILE *t = fopen(p, "r");
    if (!t) return -1;
    fclose(t);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s --threads %d --steps %d 2>/dev/null", p, threads, steps);
    return peer_median_ms(cmd, NULL);
}

typedef struct model {
    vg_graph *g;
    vg_output x, y;
    vg_op *train;
} model;

static void build(model *m, vg_status *st) {
    vg_graph *g = m->g = vg_graph_new();
    vg_graph_set_seed(g, 1);
    m->x = vg_placeholder(g, VG_FLOAT, (int64_t[]){T, B, IN}, 3, "x");
    m->y = vg_placeholder(g, VG_INT64, (int64_t[]){B}, 1, "y");
    vg_rnn_cell *cell = vg_lstm_block_fused_cell_new(H, 1.0f, 0.0f, false);
    vg_output outs, fin[2];
    vg_graph_push_scope(g, "rnn");
    vg_fused_rnn(cell, g, m->x, NULL, VG_FLOAT, (vg_output){NULL, 0}, &outs, fin, NULL);
    vg_graph_pop_scope(g);
    vg_rnn_cell_free(cell);
    vg_output logits = vg_layers_dense(g, fin[1], 10, VG_ACT_NONE, NULL);
    vg_output loss = vg_reduce_mean(g, vg_out(vg_sparse_softmax_xent(g, logits, m->y, NULL), 0), NULL, -1, false, "loss");
    vg_optimizer *opt = vg_optimizer_new_adam(1e-3, 0.9, 0.999, 1e-8);
    m->train = vg_optimizer_minimize(opt, g, loss, NULL, 0, vg_get_or_create_global_step(g), NULL);
    vg_optimizer_free(opt);
    if (vg_graph_status(g, st)) die("graph", st);
}

/* median ms/step of `steps` steps after a warm-up, on a fresh session */
static double run_vigil(model *m, int threads, int steps, vg_tensor **xb, vg_tensor **yb) {
    vg_status st;
    vg_session_options so = {threads, threads};
    vg_op *init = vg_graph_op_by_name(m->g, "init");
    vg_session *s = vg_session_new(m->g, &so, &st);
    if (!s || vg_session_run_targets(s, &init, 1, &st)) die("session", &st);
    vg_output feeds[2] = {m->x, m->y};
    double *ts = malloc(sizeof(double) * (size_t)steps);
    for (int k = -20; k < steps; k++) {
        vg_tensor *v[2] = {xb[(k + 20) % NB], yb[(k + 20) % NB]};
        double t0 = now_ms();
        if (vg_session_run(s, NULL, feeds, v, 2, NULL, NULL, 0, &m->train, 1, NULL, &st)) die("run", &st);
        if (k >= 0) ts[k] = now_ms() - t0;
    }
    double med = median(ts, steps);
    free(ts);
    vg_session_free(s);
    return med;
}

int main(int argc, char **argv) {
    int only = 0, steps = 200, rounds = 3;
    bool peer = true;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) only = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--no-peer")) peer = false;
    }
    if (steps < 1) steps = 1;
    if (rounds < 1 || rounds > 15) rounds = 3;
    vg_status st;
    model m;
    build(&m, &st);
    if (!vg_global_variables_initializer(m.g)) die("init", NULL);
    vg_tensor *xb[NB], *yb[NB];
    srand(1);
    for (int k = 0; k < NB; k++) {
        xb[k] = vg_tensor_new(VG_FLOAT, (int64_t[]){T, B, IN}, 3, &st);
        yb[k] = vg_tensor_new(VG_INT64, (int64_t[]){B}, 1, &st);
        float *x = vg_tensor_data(xb[k]);
        int64_t *y = vg_tensor_data(yb[k]);
        for (int i = 0; i < T * B * IN; i++) x[i] = rand() / (float)RAND_MAX;
        for (int i = 0; i < B; i++) y[i] = rand() % 10;
    }
    int tcount[2] = {1, 2}, nt = 2;
    if (only > 0) {
        tcount[0] = only;
        nt = 1;
    }
    printf("{\"bench\": \"lstm\", \"time_steps\": %d, \"batch\": %d, \"inputs\": %d, \"units\": %d, \"steps\": %d, "
           "\"rounds\": %d, \"results\": [",
           T, B, IN, H, steps, rounds);
    for (int ti = 0; ti < nt; ti++) {
        double vr[15], pr[15];
        for (int r = 0; r < rounds; r++) {
            vr[r] = run_vigil(&m, tcount[ti], steps, xb, yb);
            pr[r] = peer ? run_peer(tcount[ti], steps) : -1;
        }
        double v = median(vr, rounds), p = median(pr, rounds);
        printf("%s{\"threads\": %d, \"vigil_ms\": %.3f, \"torch_ms\": %.3f, \"ratio\": %.3f}", ti ? ", " : "",
               tcount[ti], v, p, p > 0 ? v / p : -1.0);
        fflush(stdout);
    }
    printf("]}\n");
    for (int k = 0; k < NB; k++) {
        vg_tensor_free(xb[k]);
        vg_tensor_free(yb[k]);
    }
    vg_graph_free(m.g);
    return 0;
}
